package audit

// Actions are the action codes the audit log records, each with its sentence in every
// console language (the catalogs' audit.event.<code with "." as "_">). An action added
// to the code belongs here too: the console's test of the audit page renders each one.
var Actions = []string{
	"account.create", "account.delete", "account.disable", "account.enable", "account.test", "account.update",
	"alert.acknowledge", "alert.call", "alert.exhaust", "alert.open", "alert.policy.create", "alert.policy.delete", "alert.policy.update", "alert.resolve", "alert.step", "alert.unrouted",
	"alert.flapping", "alert.notice_cap",
	"alert.inhibit", "alert.inhibit_end", "alert.release",
	"apikey.auth_failed", "apikey.callback.remove", "apikey.callback.resend", "apikey.callback.set", "apikey.create", "apikey.revoke",
	"batch.approve", "batch.cancel", "batch.create", "batch.expire", "batch.recall", "batch.recall_approve", "batch.recall_expire", "batch.recall_reject", "batch.recall_request", "batch.reject", "batch.withdraw",
	"chat_group.create", "chat_group.delete", "chat_group.update",
	"duty.feed.delete", "duty.feed.rotate", "duty.holiday.delete", "duty.holiday.set", "duty.holidays.import", "duty.holidays.set", "duty.override.delete", "duty.override.set", "duty.reminder.set", "duty.rotation.create", "duty.rotation.delete", "duty.rotation.update", "duty.slot.add", "duty.slot.remove", "duty.swap.create", "duty.swap.delete", "duty.week.replace",
	"heartbeat.create", "heartbeat.delete", "heartbeat.token", "heartbeat.update",
	"incident.abandon", "incident.acknowledge", "incident.join", "incident.open", "incident.resolve", "incident.storm",
	"inhibit.create", "inhibit.delete", "inhibit.update",
	"integration.create", "integration.delete", "integration.token", "integration.update",
	"message.cancel", "message.recall", "message.recall_fail", "message.recall_refuse", "message.retry",
	"messages.resend",
	"monitoring.delete", "monitoring.patch", "monitoring.post", "monitoring.put",
	"recipient.activate", "recipient.create", "recipient.deactivate", "recipient.update",
	"recipients.export", "recipients.import", "recipients.upsert",
	"report_schedule.create", "report_schedule.delete", "report_schedule.send_failed", "report_schedule.sent", "report_schedule.update",
	"settings.update",
	"silence.approve", "silence.create", "silence.end", "silence.expire", "silence.reject", "silence.release", "silence.update",
	"template.create", "template.delete", "template.rerender", "template.rollback", "template.test_send", "template.update", "template.version_retire",
	"user.create", "user.disable", "user.enable", "user.language", "user.login", "user.login_failed", "user.login_throttled", "user.logout", "user.logout_everywhere", "user.password_change", "user.password_change_failed", "user.password_change_throttled", "user.password_reset", "user.role", "user.session_sign_out",
}
