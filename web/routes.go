package web

import (
	"time"

	"github.com/gin-gonic/gin"

	"herald/access"
	"herald/handlers"
	"herald/static"
)

// How long a request may take before it is answered 503 (see withDeadline): a caller
// hears within 5 s that the database is stalled. Slow routes move thousands of rows or
// hash a password (bcrypt is slow on purpose, and slower still on a busy machine).
const (
	requestDeadline = 4 * time.Second
	slowDeadline    = time.Minute
)

// slowRoutes are the routes that get slowDeadline, by method and path.
var slowRoutes = map[string]bool{
	"POST /login":                     true,
	"POST /password":                  true,
	"POST /users":                     true,
	"POST /users/:id/password":        true,
	"POST /recipients/import":         true,
	"GET /recipients/export.csv":      true,
	"POST /duty/holidays/import":      true,
	"POST /duty/holidays/national":    true,
	"POST /messages/resend":           true,
	"POST /batches/:id/cancel":        true,
	"POST /batches/:id/resend":        true,
	"PUT /api/v1/recipients":          true,
	"POST /api/v1/batches/:id/cancel": true,
	"POST /api/v1/batches/:id/resend": true,
	"PUT /api/v1/duty/holidays":       true,
}

// routes lists every route Herald serves, grouped by who may call it. metrics is nil
// when the console does not serve /metrics.
func routes(r *gin.Engine, h *handlers.Handlers, session gin.HandlersChain, api *apiAuth, mon *monitoring, metrics gin.HandlerFunc) {
	// Operations and assets: no session; /metrics asks for its own token.
	r.GET("/healthz", h.Healthz)
	r.GET("/readyz", h.Readyz)
	if metrics != nil {
		r.GET("/metrics", metrics)
	}
	r.GET(static.Prefix+"*path", gin.WrapH(static.Handler()))
	// A person's duty calendar feed: its secret address is the credential.
	r.GET(handlers.DutyFeedPath+":file", h.DutyFeed)
	r.HEAD(static.Prefix+"*path", gin.WrapH(static.Handler()))
	// An alert notice's acknowledgment link and the providers' callbacks: the signed
	// link, or the provider's signature, is the credential; no session.
	r.GET("/ack/:token", h.AckPage)
	r.POST("/ack/:token", formBody(maxFormBytes, false), h.AckAct)
	r.GET("/callbacks/wecom/:account", h.WeComCallback)
	r.POST("/callbacks/wecom/:account", h.WeComCallback)
	// A voice provider's reports of calls: its signature or token is the credential.
	r.POST("/callbacks/voice/:account", h.VoiceCallback)

	// The console: every route below knows the signed-in user, if any, and takes small
	// forms without files.
	console := r.Group("/", append(session, formBody(maxFormBytes, false))...)
	console.GET("/login", h.LoginForm)
	console.POST("/login", h.Login)
	console.POST("/logout", h.Logout)

	// Viewers read.
	viewer := console.Group("/", requireRole(access.RoleViewer))
	// Asynqmon: read-write for operators and admins, read-only for viewers; every
	// request but a GET is audited with its answer.
	viewer.Any(MonitoringPath, auditUnsafe(h), mon.serve)
	viewer.Any(MonitoringPath+"/*path", auditUnsafe(h), mon.serve)
	viewer.GET("/", h.Dashboard)
	viewer.GET("/api-reference", h.APIReference)
	viewer.GET("/dashboard/live", h.DashboardLive)
	viewer.GET("/password", h.PasswordForm)
	viewer.POST("/password", h.ChangePassword)
	viewer.POST("/sessions/revoke", h.SignOutEverywhere)
	viewer.POST("/sessions/:id/sign-out", h.SignOutSession)
	viewer.POST("/language", h.SetLanguage)
	viewer.GET("/batches/:id", h.Batch)
	viewer.GET("/batches/:id/progress", h.BatchProgress)
	viewer.GET("/messages", h.Messages)
	viewer.GET("/messages/live", h.MessagesLive)
	viewer.GET("/messages/:id", h.Message)
	viewer.GET("/recipients", h.Recipients)
	viewer.GET("/recipients/export.csv", h.ExportRecipients)
	viewer.GET("/templates", h.Templates)
	viewer.GET("/templates/:name/edit", h.EditTemplateForm)
	viewer.GET("/templates/:name/diff", h.TemplateDiff)
	viewer.GET("/duty", h.Duty)
	viewer.GET("/duty/roster", h.DutyRoster)
	viewer.GET("/duty/calendar", h.DutyCalendar)
	viewer.GET("/duty/feeds", h.DutyFeeds)
	viewer.GET("/audit", h.AuditLog)
	viewer.GET("/alerts", h.Alerts)
	viewer.GET("/alerts/live", h.AlertsLive)
	viewer.GET("/alerts/:id", h.Alert)
	viewer.GET("/silences", h.Silences)
	viewer.GET("/reports", h.Reports)
	viewer.GET("/reports/csv/:report", h.ReportCSV)

	// Operators also compose, retry, cancel and edit staff, duty and templates.
	operator := console.Group("/", requireRole(access.RoleOperator))
	operator.GET("/compose", h.ComposeForm)
	operator.POST("/compose", h.Compose)
	operator.POST("/compose/preview", h.ComposePreview)
	operator.GET("/compose/content", h.ComposeContent)
	operator.GET("/compose/people", h.ComposePeople)
	operator.POST("/messages/:id/retry", h.MessageRetry)
	operator.POST("/batches/:id/approve", h.ApproveBatch)
	operator.POST("/batches/:id/reject", h.RejectBatch)
	operator.POST("/batches/:id/withdraw", h.WithdrawBatch)
	operator.POST("/messages/:id/cancel", h.MessageCancel)
	operator.POST("/messages/:id/recall", h.MessageRecall)
	operator.POST("/batches/:id/recall", h.BatchRecall)
	operator.POST("/batches/:id/cancel", h.CancelBatch)
	operator.POST("/batches/:id/resend", h.ResendBatch)
	operator.POST("/batches/:id/recall/approve", h.ApproveRecall)
	operator.POST("/batches/:id/recall/reject", h.RejectRecall)
	operator.GET("/messages/resend", h.ResendForm)
	operator.POST("/messages/resend", h.Resend)
	operator.GET("/recipients/new", h.NewRecipientForm)
	operator.POST("/recipients", h.CreateRecipient)
	operator.GET("/recipients/import", h.RecipientImportForm)
	operator.GET("/recipients/template.csv", h.RecipientImportTemplate)
	operator.GET("/recipients/:id/edit", h.EditRecipientForm)
	operator.POST("/recipients/:id/edit", h.UpdateRecipient)
	operator.POST("/recipients/:id/active", h.SetRecipientActive)
	operator.GET("/templates/new", h.NewTemplateForm)
	operator.POST("/templates", h.CreateTemplate)
	operator.POST("/templates/preview", h.TemplatePreview)
	operator.POST("/templates/:name/edit", h.UpdateTemplate)
	operator.POST("/templates/:name/delete", h.DeleteTemplate)
	operator.POST("/templates/:name/test", h.TestSendTemplate)
	operator.POST("/templates/:name/rollback", h.RollbackTemplate)
	operator.POST("/templates/:name/retire", h.RetireTemplateVersion)
	operator.POST("/duty/slots", h.AddDutySlot)
	operator.POST("/duty/slots/delete", h.RemoveDutySlot)
	operator.POST("/duty/overrides", h.SetDutyOverride)
	operator.POST("/duty/overrides/delete", h.DeleteDutyOverride)
	operator.POST("/duty/holidays", h.SetDutyHoliday)
	operator.POST("/duty/holidays/delete", h.DeleteDutyHoliday)
	operator.GET("/duty/holidays/import", h.HolidayImportForm)
	operator.GET("/duty/holidays/national", h.NationalImportForm)
	operator.GET("/duty/rotations/new", h.NewRotationForm)
	operator.GET("/duty/swaps/new", h.NewSwapForm)
	operator.POST("/duty/swaps", h.CreateSwap)
	operator.POST("/duty/swaps/:id/delete", h.DeleteSwap)
	operator.POST("/duty/reminder", h.SaveDutyReminder)
	operator.POST("/duty/feeds/:id", h.RotateDutyFeed)
	operator.POST("/duty/feeds/:id/delete", h.DeleteDutyFeed)
	operator.POST("/duty/rotations", h.CreateRotation)
	operator.GET("/duty/rotations/:name/edit", h.EditRotationForm)
	operator.POST("/duty/rotations/:name/edit", h.UpdateRotation)
	operator.POST("/duty/rotations/:name/delete", h.DeleteRotation)
	operator.POST("/alerts/:id/ack", h.AcknowledgeAlert)
	operator.POST("/alerts/:id/resolve", h.ResolveAlert)
	operator.GET("/silences/new", h.NewSilenceForm)
	operator.POST("/silences", h.CreateSilence)
	operator.POST("/silences/preview", h.PreviewSilence)
	operator.GET("/silences/:id/edit", h.EditSilenceForm)
	operator.POST("/silences/:id/edit", h.UpdateSilence)
	operator.POST("/silences/:id/expire", h.ExpireSilence)
	operator.POST("/silences/:id/approve", h.ApproveSilence)
	operator.POST("/silences/:id/reject", h.RejectSilence)
	// CSV imports take an uploaded file: a larger body, read once the user is known to
	// be an operator.
	imports := r.Group("/", append(session, requireRole(access.RoleOperator), formBody(maxUploadBytes, true))...)
	imports.POST("/recipients/import", h.ImportRecipients)
	imports.POST("/duty/holidays/import", h.ImportHolidays)
	imports.POST("/duty/holidays/national", h.ImportNational)

	// Admins also manage accounts, users, API keys, escalation policies, integrations and
	// heartbeats.
	admins := console.Group("/", requireRole(access.RoleAdmin))
	admins.GET("/accounts", h.Accounts)
	admins.GET("/accounts/usage", h.AccountsUsage)
	admins.GET("/accounts/config-fields", h.AccountConfigFields)
	admins.GET("/accounts/new", h.NewAccountForm)
	admins.POST("/accounts", h.CreateAccount)
	admins.GET("/accounts/:name/edit", h.EditAccountForm)
	admins.POST("/accounts/:name/edit", h.UpdateAccount)
	admins.POST("/accounts/:name/enabled", h.SetAccountEnabled)
	admins.POST("/accounts/:name/test", h.TestAccount)
	admins.POST("/accounts/:name/delete", h.DeleteAccount)
	admins.GET("/accounts/:name/usage", h.AccountUsage)
	admins.GET("/chat-groups", h.ChatGroups)
	admins.GET("/chat-groups/new", h.NewChatGroupForm)
	admins.POST("/chat-groups", h.CreateChatGroup)
	admins.GET("/chat-groups/:name/edit", h.EditChatGroupForm)
	admins.POST("/chat-groups/:name/edit", h.UpdateChatGroup)
	admins.POST("/chat-groups/:name/delete", h.DeleteChatGroup)
	admins.GET("/users", h.Users)
	admins.POST("/users", h.CreateUser)
	admins.POST("/users/:id/role", h.SetUserRole)
	admins.POST("/users/:id/disabled", h.SetUserDisabled)
	admins.POST("/users/:id/password", h.ResetUserPassword)
	admins.GET("/settings", h.Settings)
	admins.POST("/settings", h.SaveSettings)
	admins.GET("/api-keys", h.APIKeys)
	admins.POST("/api-keys", h.CreateAPIKey)
	admins.POST("/api-keys/:id/revoke", h.RevokeAPIKey)
	admins.GET("/api-keys/:id/callback", h.KeyCallback)
	admins.POST("/api-keys/:id/callback", h.SetKeyCallback)
	admins.POST("/api-keys/:id/events/:event/resend", h.ResendKeyEvent)
	admins.GET("/escalation-policies", h.Policies)
	admins.GET("/escalation-policies/new", h.NewPolicyForm)
	admins.POST("/escalation-policies", h.CreatePolicy)
	admins.GET("/escalation-policies/:name/edit", h.EditPolicyForm)
	admins.POST("/escalation-policies/:name/edit", h.UpdatePolicy)
	admins.POST("/escalation-policies/:name/delete", h.DeletePolicy)
	admins.GET("/integrations", h.Integrations)
	admins.GET("/integrations/new", h.NewIntegrationForm)
	admins.POST("/integrations", h.CreateIntegration)
	admins.GET("/integrations/:name", h.Integration)
	admins.GET("/integrations/:name/edit", h.EditIntegrationForm)
	admins.POST("/integrations/:name/edit", h.UpdateIntegration)
	admins.POST("/integrations/:name/token", h.RotateIntegrationToken)
	admins.POST("/integrations/:name/delete", h.DeleteIntegration)
	admins.GET("/reports/schedules", h.ReportSchedules)
	admins.POST("/reports/schedules", h.CreateReportSchedule)
	admins.POST("/reports/schedules/:id/delete", h.DeleteReportSchedule)
	admins.GET("/heartbeats", h.Heartbeats)
	admins.GET("/heartbeats/new", h.NewHeartbeatForm)
	admins.POST("/heartbeats", h.CreateHeartbeat)
	admins.GET("/heartbeats/:name/edit", h.EditHeartbeatForm)
	admins.POST("/heartbeats/:name/edit", h.UpdateHeartbeat)
	admins.POST("/heartbeats/:name/token", h.RotateHeartbeatToken)
	admins.POST("/heartbeats/:name/delete", h.DeleteHeartbeat)

	// The JSON API: bearer API keys with scopes; admin has every scope.
	v1 := r.Group("/api/v1", apiLanguage)
	v1.GET("/openapi.json", h.OpenAPIDescription) // no key: it describes, it holds nothing
	send, read, admin := api.require(access.ScopeSend), api.require(access.ScopeRead), api.require(access.ScopeAdmin)
	v1.POST("/messages", send, h.SendMessages)
	v1.POST("/messages/:id/cancel", send, h.CancelMessage)
	v1.POST("/messages/:id/retry", send, h.RetryMessage)
	v1.POST("/messages/:id/recall", send, h.RecallMessageAPI)
	v1.POST("/batches/:id/recall", send, h.RecallBatchAPI)
	v1.POST("/batches/:id/cancel", send, h.APICancelBatch)
	v1.POST("/batches/:id/resend", send, h.APIResendBatch)
	v1.GET("/messages", read, h.ListMessagesAPI)
	v1.GET("/messages/:id", read, h.GetMessage)
	v1.GET("/audit", admin, h.ListAuditAPI)
	v1.GET("/batches/:id", read, h.GetBatch)
	v1.POST("/batches/:id/approve", admin, h.APIApproveBatch)
	v1.POST("/batches/:id/reject", admin, h.APIRejectBatch)
	v1.POST("/batches/:id/recall/approve", admin, h.APIApproveRecall)
	v1.POST("/batches/:id/recall/reject", admin, h.APIRejectRecall)
	v1.PUT("/api-keys/:name/callback", admin, h.APIPutCallback)
	v1.GET("/settings", admin, h.APIGetSettings)
	v1.PUT("/settings", admin, h.APIPutSettings)

	v1.GET("/recipients", admin, h.APIListRecipients)
	v1.PUT("/recipients", admin, h.APIUpsertRecipients)
	v1.GET("/duty/week", admin, h.APIGetDutyWeek)
	v1.PUT("/duty/week", admin, h.APIPutDutyWeek)
	v1.GET("/duty/overrides", admin, h.APIListOverrides)
	v1.PUT("/duty/overrides", admin, h.APIPutOverride)
	v1.DELETE("/duty/overrides", admin, h.APIDeleteOverride)
	v1.GET("/duty/holidays", admin, h.APIListHolidays)
	v1.PUT("/duty/holidays", admin, h.APIPutHolidays)
	v1.DELETE("/duty/holidays/:date", admin, h.APIDeleteHoliday)
	v1.GET("/duty/roster", admin, h.APIRoster)
	v1.GET("/duty/calendar", read, h.APIDutyCalendar)
	v1.GET("/duty/rotations", admin, h.APIListRotations)
	v1.POST("/duty/rotations", admin, h.APICreateRotation)
	v1.GET("/duty/rotations/:name", admin, h.APIGetRotation)
	v1.PUT("/duty/rotations/:name", admin, h.APIUpdateRotation)
	v1.DELETE("/duty/rotations/:name", admin, h.APIDeleteRotation)
	v1.GET("/templates", admin, h.APIListTemplates)
	v1.POST("/templates", admin, h.APICreateTemplate)
	v1.GET("/templates/:name", admin, h.APIGetTemplate)
	v1.PUT("/templates/:name", admin, h.APIUpdateTemplate)
	v1.DELETE("/templates/:name", admin, h.APIDeleteTemplate)
	v1.GET("/templates/:name/versions", admin, h.APITemplateVersions)
	v1.GET("/templates/:name/versions/:n", admin, h.APITemplateVersion)
	v1.POST("/templates/:name/rollback", admin, h.APIRollbackTemplate)
	v1.POST("/templates/:name/versions/:n/retire", admin, h.APIRetireTemplateVersion)
	v1.GET("/accounts", admin, h.APIListAccounts)
	v1.POST("/accounts", admin, h.APICreateAccount)
	v1.GET("/accounts/:name", admin, h.APIGetAccount)
	v1.PUT("/accounts/:name", admin, h.APIUpdateAccount)
	v1.DELETE("/accounts/:name", admin, h.APIDeleteAccount)
	v1.GET("/chat-groups", admin, h.APIListChatGroups)
	v1.POST("/chat-groups", admin, h.APICreateChatGroup)
	v1.GET("/chat-groups/:name", admin, h.APIGetChatGroup)
	v1.PUT("/chat-groups/:name", admin, h.APIUpdateChatGroup)
	v1.DELETE("/chat-groups/:name", admin, h.APIDeleteChatGroup)
	v1.GET("/reports/response", read, h.APIResponseReport)
	v1.GET("/reports/interruptions", read, h.APIInterruptionsReport)
	v1.GET("/reports/duty", read, h.APIDutyReport)
	v1.GET("/report-schedules", admin, h.APIListReportSchedules)
	v1.POST("/report-schedules", admin, h.APICreateReportSchedule)
	v1.GET("/report-schedules/:id", admin, h.APIGetReportSchedule)
	v1.DELETE("/report-schedules/:id", admin, h.APIDeleteReportSchedule)
	v1.GET("/alerts", read, h.APIListAlerts)
	v1.GET("/alerts/:id", read, h.APIGetAlert)
	v1.POST("/alerts/:id/ack", send, h.APIAcknowledgeAlert)
	v1.POST("/alerts/:id/resolve", send, h.APIResolveAlert)
	v1.GET("/silences", send, h.APIListSilences)
	v1.POST("/silences", send, h.APICreateSilence)
	v1.GET("/silences/:id", send, h.APIGetSilence)
	v1.PUT("/silences/:id", send, h.APIUpdateSilence)
	v1.DELETE("/silences/:id", send, h.APIExpireSilence)
	v1.GET("/escalation-policies", admin, h.APIListPolicies)
	v1.POST("/escalation-policies", admin, h.APICreatePolicy)
	v1.GET("/escalation-policies/:name", admin, h.APIGetPolicy)
	v1.PUT("/escalation-policies/:name", admin, h.APIUpdatePolicy)
	v1.DELETE("/escalation-policies/:name", admin, h.APIDeletePolicy)
	v1.GET("/integrations", admin, h.APIListIntegrations)
	v1.POST("/integrations", admin, h.APICreateIntegration)
	v1.GET("/integrations/:name", admin, h.APIGetIntegration)
	v1.PUT("/integrations/:name", admin, h.APIUpdateIntegration)
	v1.DELETE("/integrations/:name", admin, h.APIDeleteIntegration)
	v1.POST("/integrations/:name/token", admin, h.APIRotateIntegrationToken)
	v1.GET("/integrations/:name/events", admin, h.APIIntegrationEvents)
	// A monitoring tool's events: the integration's own token, not an API key.
	v1.POST("/inbound/:name", h.Inbound)
	v1.GET("/heartbeats", admin, h.APIListHeartbeats)
	v1.POST("/heartbeats", admin, h.APICreateHeartbeat)
	v1.GET("/heartbeats/:name", admin, h.APIGetHeartbeat)
	v1.PUT("/heartbeats/:name", admin, h.APIUpdateHeartbeat)
	v1.DELETE("/heartbeats/:name", admin, h.APIDeleteHeartbeat)
	v1.POST("/heartbeats/:name/token", admin, h.APIRotateHeartbeatToken)
	// A heartbeat's ping: its own token.
	v1.GET("/heartbeats/:name/ping", h.Ping)
	v1.POST("/heartbeats/:name/ping", h.Ping)
}
