// Package dispatch is Herald's service layer: every write the console, the JSON API and
// the command line make is a method of Dispatcher, the same one for the same action. Each
// validates its input (a *kernel.FieldError names the field), writes the change and its
// audit entry in one transaction (change, in service.go), and runs its effects (enqueue,
// cache refresh, callbacks) after the commit. The intake is one of them: it resolves
// recipients, applies the duty rule, renders content per recipient, writes the batch and
// its messages in one transaction, and enqueues them after commit.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/directory"
	"herald/duty"
	"herald/inbound"
	"herald/inhibit"
	"herald/internal/batch"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/tasks"
	"herald/templates"
)

// Dispatcher turns requests into stored, enqueued messages; NewDispatcher builds it.
type Dispatcher struct {
	store    *models.Store
	enqueuer *tasks.Enqueuer
	log      *slog.Logger
	// loc is HERALD_TIMEZONE: the duty rule looks at the delivery date there.
	loc *time.Location
	// clock is the clock; nil means models.Now.
	clock func() time.Time
	// stats counts created messages for the dashboard; nil counts nothing.
	stats *models.Stats
	// accounts caches account lookups; nil reads the store every time.
	accounts *sending.AccountCache
	// callbacks hears of messages cancelled here, so their events go out at once; nil:
	// the recovery pass finds them within seconds.
	callbacks *tasks.Callbacks
	// channels builds the platform adapters a recall calls; nil: nothing can be recalled.
	channels *channels.Registry
	// inboundObserver hears of the events integrations receive (Config.InboundObserver).
	inboundObserver inbound.Observer
	// alerts is the alerts' service (package alert), built from alertConfig.
	alerts      *alert.Service
	alertConfig alert.Config

	groups    grouper
	fallbacks fallbackRuns
	threshold thresholdCache
	// inhibitRules are the inhibition rules compiled, for every Referee of the process.
	inhibitRules     *inhibit.RuleCache
	inhibitRulesOnce sync.Once
	// writes gathers concurrent intakes into shared transactions.
	writes     *batch.Batcher[write, error]
	writesOnce sync.Once
}

// write is one intake waiting to be written with others, and the context of its request.
type write struct {
	ctx context.Context
	models.NewBatch
}

// writeBatch writes an intake, in one transaction with the intakes of other requests that wait
// at the same moment. A request that gave up before its turn is not written; once its
// turn has come, it waits for the outcome, so that its answer says what happened.
func (d *Dispatcher) writeBatch(ctx context.Context, nb models.NewBatch) error {
	if len(nb.Messages) > tasks.ChunkSize {
		// A large intake is a transaction's worth on its own; it would hold up small ones.
		return d.store.CreateBatch(ctx, nb.Batch, nb.Messages, nb.Extras)
	}
	// Requests that come together share a transaction (batch.Commits): without the
	// grouping nearly every request at 1,000 a second had a transaction of its own.
	d.writesOnce.Do(func() { d.writes = batch.NewGrouping(writeRunners, writeMax, batch.Commits, d.writeBatches) })
	return d.writes.Do(write{ctx: ctx, NewBatch: nb})
}

// Shared transactions: a few at once under load, so one's commit overlaps the next one's
// statements.
const (
	writeRunners = 4
	writeMax     = 64
)

func (d *Dispatcher) writeBatches(ctx context.Context, ws []write) []error {
	errs := make([]error, len(ws))
	var live []models.NewBatch
	var at []int
	for i, w := range ws {
		if err := w.ctx.Err(); err != nil {
			errs[i] = err
			continue
		}
		live = append(live, w.NewBatch)
		at = append(at, i)
	}
	// The shared transaction lasts no longer than its callers wait: when the database
	// stalls, it is given up (and rolled back) as the last of them gives up, instead of
	// holding every caller for the batcher's own limit.
	if last, ok := latestDeadline(ws, at); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, last)
		defer cancel()
	}
	for k, err := range d.store.CreateBatches(ctx, live) {
		errs[at[k]] = err
	}
	return errs
}

// latestDeadline is the latest deadline of the writes at the given indexes; false when
// one of them has none.
func latestDeadline(ws []write, at []int) (last time.Time, ok bool) {
	for _, i := range at {
		d, has := ws[i].ctx.Deadline()
		if !has {
			return time.Time{}, false
		}
		if d.After(last) {
			last = d
		}
	}
	return last, len(at) > 0
}

// Request is one ask to notify some people. The console names people by id, the API by
// external id; either or both may be given.
type Request struct {
	Source string // "console" or "api"
	Actor  string
	// Makers are the people behind the request (console usernames): the user who
	// composed it, or the creator of the API key; for a duty reminder, whoever last set
	// it up. None of them may approve the batch.
	Makers   []string
	APIKeyID *int64
	// CallbackKeyID, when set, is the API key that hears of each message's outcome.
	CallbackKeyID *int64
	// MaxRecipients is the API key's cap on the people one request reaches; 0: none
	// beyond directory.MaxRecipients.
	MaxRecipients int

	Platform  string
	Account   string // account name
	AccountID int64  // account id (the console form)

	Recipients   []string // external ids
	RecipientIDs []int64
	ToOnDuty     bool
	// Departments and Branches name whole groups: every active recipient in them.
	Departments []string
	Branches    []string
	// Groups name chat groups: one post to each (chatgroups.go). Mention, when not nil,
	// says whom those posts @ ("on_duty", "none", staff external ids) instead of each
	// group's own setting.
	Groups  []string
	Mention []string

	Template string
	// TemplateVersion pins the send to that version of the template; 0: its latest.
	TemplateVersion int
	Variables       map[string]string
	// Fallback names the platforms to try next, in order, for a person without an
	// address on the first or whose message stops (fallback.go); none: the template's.
	Fallback []string
	Subject  string
	Text     string

	Priority models.Priority
	SendAt   *time.Time
	// DutyDate, when set, is the instant whose date's roster decides who is on duty,
	// instead of the delivery date: a reminder sent today to tomorrow's people.
	DutyDate *time.Time
	// Reminder, when set, is the date this batch reminds the people on duty of; it is
	// recorded with the batch, and a second reminder of that date fails with
	// kernel.ErrDuplicate.
	Reminder       string
	IdempotencyKey string
	RequestHash    string
	// Respond, when set, builds the answer to an idempotent API request; it is stored
	// with the batch in one transaction so a retry can replay it.
	Respond func(*Result) (status int, body []byte)
	// AuditIP, when set, records the intake in the audit log (from this address) in the
	// batch's own transaction.
	AuditIP string
	// Ack, when set, makes the batch an alert: someone must acknowledge it, or the
	// named escalation policy calls more people (alerts.go).
	Ack *AckRequest
	// Digest, when set, folds the notices into digests (digests.go); none: the
	// template's default digest, if it has one.
	Digest *templates.DigestRequest
	// notice marks Herald's own notices of an alert: the escalation policy chose their
	// people, so the duty rule does not apply again.
	notice bool
	// ackPlaceholder stands for the acknowledgment link where the template places
	// {{.ack_url}} (NewAckPlaceholder); "" for a request that opens no alert.
	ackPlaceholder string
	// noticeCap bounds the notices the alert opened sends an hour (an integration's
	// route's max_notices_per_hour); 0: no bound.
	noticeCap int
	// inhibited, when set, opens the alert inhibited (an integration's event): it
	// notifies nobody and has no step until released (package inhibit).
	inhibited *inbound.Inhibited
}

// Result is what intake created, or for a preview, what it would create.
type Result struct {
	Batch    *models.Batch
	Messages []models.Message
	// Names maps recipient ids to external ids, for reporting messages.
	Names map[int64]string
	// Groups maps chat group ids to their names, for reporting posts to groups.
	Groups   map[int64]string
	Skipped  models.Reasons
	Rejected models.Reasons
	Roster   *duty.Roster
	// Alert is the alert the batch opened (a request with Ack).
	Alert *alert.Alert
	// chain is the fallback chain the messages carry.
	chain []string
	// daily are the messages' rows of "same content once a day" (skipSentToday).
	daily []models.DailyContent
	// firstStep is the first step of the alert, written with it.
	firstStep *alert.AlertStep
	// account is the account the batch sends through.
	account *sending.Account
	// digest is the digest the notices may wait in (digests.go).
	digest *templates.DigestSpec
	// ackPlaceholder is the request's (Request.ackPlaceholder).
	ackPlaceholder string
	// reach is how many people an alert can reach, its policy's included
	// (checkAlertReach); 0 for a send that opens none.
	reach int
	// policy is the escalation policy of a send that opens an alert ("" for none).
	policy string
	// inhibited is the request's (Request.inhibited).
	inhibited *inbound.Inhibited
}

// Limits of one request.
const (
	maxSchedule   = 90 * 24 * time.Hour
	maxPast       = time.Minute
	maxSubjectLen = 255
	maxGroupLen   = 128
)

// Rejection reasons.
const (
	ReasonUnknownRecipient = "unknown_recipient"
	ReasonNoAddress        = "no_address"
	ReasonInactive         = "inactive"
)

func (d *Dispatcher) now() time.Time { return kernel.Clock(d.clock).Now() }

// Submit validates a request, records it and enqueues its messages. A validation error
// is a *kernel.FieldError, and then nothing is written.
func (d *Dispatcher) Submit(ctx context.Context, req Request) (*Result, error) {
	for round := 1; ; round++ {
		res, err := d.submitOnce(ctx, req)
		// Another intake sent someone the same content today between this one's look
		// and its write: plan again, and they are skipped this time.
		if !contentTaken(err) || round == contentRetries {
			return res, err
		}
	}
}

// submitOnce is one round of Submit.
func (d *Dispatcher) submitOnce(ctx context.Context, req Request) (*Result, error) {
	res, err := d.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Ack != nil {
		if err := d.openAlert(ctx, req, res); err != nil {
			return nil, err
		}
	}
	if err := d.holdForApproval(ctx, res); err != nil {
		return nil, err
	}
	extras := &models.BatchExtras{}
	if req.Respond != nil && req.APIKeyID != nil && req.IdempotencyKey != "" {
		status, body := req.Respond(res)
		extras.Idem = &models.IdemCompletion{APIKeyID: *req.APIKeyID, Key: req.IdempotencyKey, StatusCode: status, Response: string(body)}
	}
	if req.Reminder != "" {
		extras.Reminder = &models.DutyReminder{Date: req.Reminder, BatchID: res.Batch.ID}
	}
	extras.DailyContents = res.daily
	if req.AuditIP != "" {
		actorType := "user"
		if req.APIKeyID != nil {
			actorType = "api_key"
		}
		e := audit.Entry{Actor: req.Actor, ActorType: actorType, Action: "batch.create", TargetType: "batch",
			TargetID: res.Batch.ID, IP: req.AuditIP}.WithParams(audit.Params{"accepted": strconv.Itoa(res.Batch.Accepted),
			"skipped": strconv.Itoa(len(res.Skipped)), "rejected": strconv.Itoa(len(res.Rejected))})
		extras.Audit = &e
	}
	var jobs []tasks.Job
	var gr *group
	var grouped string
	if res.Batch.Approval != models.ApprovalAwaiting {
		jobs, gr, grouped = d.assignOutsideDigests(res)
	}
	if res.Alert != nil {
		err = d.storeAlert(ctx, models.NewBatch{Batch: res.Batch, Messages: res.Messages, Extras: extras}, res, req.Respond)
	} else {
		err = d.writeBatch(ctx, models.NewBatch{Batch: res.Batch, Messages: res.Messages, Extras: extras})
	}
	if gr != nil {
		d.groups.done(gr, grouped, err == nil)
	}
	if err != nil {
		return nil, err
	}
	d.stats.Count(res.Batch.AccountID, "created", len(res.Messages))
	d.enqueue(ctx, jobs)
	d.foldFullDigests(ctx, res)
	if res.Alert != nil {
		d.fireFirstStep(ctx, res)
	}
	if res.fallsBack() && res.Batch.Approval != models.ApprovalAwaiting {
		d.FallBackSoon()
	}
	return res, nil
}

// Plan validates a request and works out who receives what, writing nothing. The
// console's "who will receive" preview shows its result.
func (d *Dispatcher) Plan(ctx context.Context, req Request) (*Result, error) {
	now := d.now()
	if err := validate(&req, now); err != nil {
		return nil, err
	}
	if req.Ack != nil {
		if err := d.checkAck(ctx, &req); err != nil {
			return nil, err
		}
	}
	sendAt := now
	if req.SendAt != nil {
		sendAt = req.SendAt.UTC().Truncate(time.Microsecond)
	}
	dutyAt := sendAt
	if req.DutyDate != nil {
		dutyAt = *req.DutyDate
	}
	posts, err := planPosts(ctx, d, &req, dutyAt)
	if err != nil {
		return nil, err
	}
	acct, err := d.account(ctx, req)
	if err != nil {
		return nil, err
	}
	tmpl, err := d.template(ctx, req)
	if err != nil {
		return nil, err
	}
	chain, err := checkFallback(req, acct.Platform, tmpl)
	if err != nil {
		return nil, err
	}
	digest, err := digestOf(req, tmpl)
	if err != nil {
		return nil, err
	}
	aud, err := d.audience(ctx, req, sendAt)
	if err != nil {
		return nil, err
	}
	res := newBatch(req, acct, tmpl, sendAt, aud)
	res.account = acct
	res.digest = digest
	if req.Ack != nil {
		res.policy = req.Ack.Policy
	}
	if tmpl != nil && req.Variables != nil {
		// Kept also for a save of the template that renders waiting messages again.
		res.Batch.Variables = req.Variables
	}
	if res.chain = chain; len(chain) > 0 {
		// The next messages of a chain are made later, from the content kept here (the
		// content approved), not from the template as it may be edited meanwhile.
		if tmpl != nil {
			res.Batch.TemplateContent = models.ContentOf(tmpl.Template())
		}
	}
	for i := range aud.people {
		if err := res.add(ctx, req, acct, tmpl, &aud.people[i], sendAt); err != nil {
			return nil, err
		}
	}
	if err := d.skipSentToday(ctx, res, acct, sendAt); err != nil {
		return nil, err
	}
	for _, p := range posts {
		if err := res.addPost(ctx, req, tmpl, p, sendAt); err != nil {
			return nil, err
		}
	}
	b := res.Batch
	b.Accepted, b.SkippedCount, b.RejectedCount = len(res.Messages), len(res.Skipped), len(res.Rejected)
	b.Skipped, b.Rejected = res.Skipped, res.Rejected
	return res, nil
}

// template finds and compiles the request's template, if it names one, and checks the
// variables against it.
func (d *Dispatcher) template(ctx context.Context, req Request) (*templates.Compiled, error) {
	if req.Template == "" {
		return nil, nil
	}
	t, err := d.store.Templates().TemplateByName(ctx, req.Template)
	if errors.Is(err, kernel.ErrNotFound) {
		return nil, kernel.Invalid("template", "compose.check.template_unknown", "Name", strconv.Quote(req.Template))
	}
	if err != nil {
		return nil, err
	}
	if t, err = d.pinned(ctx, t, req.TemplateVersion); err != nil {
		return nil, err
	}
	tmpl, err := templates.CompileTemplate(t)
	if err != nil {
		var fe *kernel.FieldError
		if !errors.As(err, &fe) {
			return nil, err
		}
		return nil, kernel.Invalid("template", "compose.check.template_broken", "Name", t.Name, "Err", fe)
	}
	if err := tmpl.CheckVariables(req.Variables); err != nil {
		return nil, err
	}
	return tmpl, nil
}

// audience is who a request reaches before the duty rule: the people named and in the
// groups named, and those on duty when asked for.
type audience struct {
	people    []directory.Recipient
	rejected  models.Reasons
	requested int
	// roster is the duty roster of the delivery date, when anyone may need it.
	roster *duty.Roster
}

// audience resolves the request's people and, when a head-office person is among them or
// the request asks for whoever is on duty, the roster of the delivery date.
func (d *Dispatcher) audience(ctx context.Context, req Request, sendAt time.Time) (audience, error) {
	var a audience
	var err error
	if a.people, a.rejected, a.requested, err = d.resolve(ctx, req); err != nil {
		return a, err
	}
	needRoster := req.ToOnDuty
	for _, p := range a.people {
		needRoster = needRoster || p.OrgType == directory.HeadOffice
	}
	needRoster = needRoster && !req.notice
	if needRoster {
		dutyAt := sendAt
		if req.DutyDate != nil {
			dutyAt = *req.DutyDate
		}
		if a.roster, err = d.Duty().RosterOn(ctx, dutyAt); err != nil {
			return a, err
		}
	}
	if req.ToOnDuty {
		if a.people, err = d.addOnDuty(ctx, a.people, a.roster); err != nil {
			return a, err
		}
	}
	// A key's cap counts everyone the request reaches, named or in a group, before the
	// duty rule: what the caller asked for, not what the day's roster lets through.
	if n := len(a.people) + len(a.rejected); req.MaxRecipients > 0 && n > req.MaxRecipients {
		return a, kernel.Invalid("recipients", "api.recipients_over_key_cap", "Max", req.MaxRecipients, "Count", n)
	}
	return a, nil
}

// newBatch starts the result of a request: its batch, with no message yet.
func newBatch(req Request, acct *sending.Account, tmpl *templates.Compiled, sendAt time.Time, aud audience) *Result {
	b := &models.Batch{ID: models.NewID(), Source: req.Source, Actor: req.Actor, APIKeyID: req.APIKeyID,
		RequestHash: req.RequestHash, Platform: acct.Platform, AccountID: acct.ID, Priority: req.Priority,
		SendAt: req.SendAt, ToOnDuty: req.ToOnDuty, Requested: aud.requested, Makers: req.Makers}
	if req.IdempotencyKey != "" {
		b.IdempotencyKey = &req.IdempotencyKey
	}
	if req.SendAt != nil {
		b.SendAt = &sendAt
	}
	if tmpl != nil {
		b.TemplateID = &tmpl.Template().ID
	}
	return &Result{Batch: b, Rejected: aud.rejected, Roster: aud.roster, Names: map[int64]string{}, ackPlaceholder: req.ackPlaceholder}
}

// add decides about one person: rejected (inactive, no address on the platform), skipped
// by the duty rule, or a message with its content rendered for them. A template that
// cannot be rendered for them, or content too large for the platform, fails the request.
func (res *Result) add(ctx context.Context, req Request, acct *sending.Account, tmpl *templates.Compiled, p *directory.Recipient, sendAt time.Time) error {
	addr := p.Address(acct.Platform)
	switch {
	case !p.Active:
		res.Rejected = append(res.Rejected, models.Reason{Recipient: p.ExternalID, Reason: ReasonInactive})
		return nil
	case addr == "" && len(res.chain) == 0:
		res.Rejected = append(res.Rejected, models.Reason{Recipient: p.ExternalID, Reason: ReasonNoAddress})
		return nil
	}
	if res.Roster != nil {
		if reason := res.Roster.SkipReason(p); reason != "" {
			res.Skipped = append(res.Skipped, models.Reason{Recipient: p.ExternalID, Reason: reason})
			return nil
		}
	}
	msgType, subject, body, field := "text", req.Subject, req.Text, "content.text"
	var htmlBody string
	if tmpl != nil {
		var err error
		if subject, body, err = tmpl.Render(ctx, acct.Platform, req.Variables, p); err == nil && channels.TakesHTML(acct.Platform) {
			htmlBody, err = tmpl.RenderHTML(ctx, acct.Platform, req.Variables, p)
		}
		if err != nil {
			var fe *kernel.FieldError
			if errors.As(err, &fe) {
				return kernel.Invalid("template", "compose.check.for_recipient", "Recipient", who(p), "Err", fe)
			}
			return err
		}
		msgType, field = tmpl.MsgType(), "template"
	}
	provider, err := providerTemplate(ctx, acct, tmpl, req.Variables, p)
	if err != nil {
		return err
	}
	var version *int
	if tmpl != nil && tmpl.Template().Version > 0 {
		version = &tmpl.Template().Version
	}
	subject = kernel.TruncateRunes(subject, maxSubjectLen)
	if err := templates.CheckSize(field, acct.Platform, who(p), channels.Message{MsgType: msgType, Title: subject, Content: body}); err != nil {
		return err
	}
	if err := templates.CheckSize(field, acct.Platform, who(p), channels.Message{Content: htmlBody}); err != nil {
		return err
	}
	res.Names[p.ID] = p.ExternalID
	m := models.Message{
		ID: models.NewID(), BatchID: res.Batch.ID, RecipientID: p.ID, AccountID: acct.ID, Platform: acct.Platform,
		Address: addr, MsgType: msgType, Subject: subject, Content: body, ContentHTML: htmlBody,
		Priority: req.Priority, Status: models.StatusPending, MaxAttempts: acct.MaxAttempts,
		SendAt: sendAt, NextAttemptAt: &sendAt, CallbackKeyID: req.CallbackKeyID, Fallback: templates.JoinChain(res.chain),
		TemplateVersion: version, ProviderTemplate: provider,
	}
	if addr == "" {
		// Nothing to send on this platform: stopped at once, the next of the chain is due.
		m.Status, m.NextAttemptAt, m.FallbackDue = models.StatusStopped, nil, true
		m.ErrorClass = models.ErrorNoAddress
	}
	res.Messages = append(res.Messages, m)
	return nil
}

// providerTemplate is the provider template a message of an sms or voice account is
// sent as, with its parameters rendered for the person (models.ProviderTemplateText;
// "" for other platforms). Alibaba Cloud and Tencent Cloud send nothing else, so their
// accounts need a template that names one (provider_template); an in-house gateway
// takes the text as well.
func providerTemplate(ctx context.Context, acct *sending.Account, tmpl *templates.Compiled, vars map[string]string, p *directory.Recipient) (string, error) {
	if !channels.ChoosesProvider(acct.Platform) {
		return "", nil
	}
	cloud := acct.Config["provider"] != channels.ProviderHTTP
	switch {
	case tmpl == nil && cloud:
		return "", kernel.Invalid("template", "templates.invalid.provider_needs_template", "Platform", acct.Platform)
	case tmpl == nil:
		return "", nil
	case tmpl.ProviderTemplate() == "" && cloud:
		return "", kernel.Invalid("provider_template", "templates.invalid.provider_template_for", "Template", tmpl.Template().Name, "Platform", acct.Platform)
	}
	params, err := tmpl.RenderParams(ctx, acct.Platform, vars, p)
	if err != nil {
		return "", err
	}
	return models.ProviderTemplateText(tmpl.ProviderTemplate(), params), nil
}

// validate checks what needs no database.
func validate(req *Request, now time.Time) error {
	if req.Priority == "" {
		req.Priority = models.PriorityNormal
	}
	if !req.Priority.Valid() {
		return kernel.Invalid("priority", "compose.check.priority")
	}
	if req.Platform != "" && !slices.Contains(channels.Platforms, req.Platform) {
		return kernel.Invalid("platform", "compose.check.platform_one_of", "Platforms", strings.Join(channels.Platforms, ", "))
	}
	if req.Platform == "" && req.Account == "" && req.AccountID == 0 && len(req.Groups) == 0 {
		return kernel.Invalid("platform", "compose.check.platform_required")
	}
	n := len(req.Recipients) + len(req.RecipientIDs)
	groups := len(req.Departments) + len(req.Branches) + len(req.Groups)
	switch {
	case n == 0 && groups == 0 && !req.ToOnDuty && req.Ack == nil && !req.notice:
		return kernel.Invalid("recipients", "compose.check.recipients_none")
	case n > directory.MaxRecipients:
		return kernel.Invalid("recipients", "compose.check.recipients_too_many", "Max", directory.MaxRecipients, "Got", n)
	}
	for i, r := range req.Recipients {
		if strings.TrimSpace(r) == "" || len(r) > directory.MaxExternalID {
			return kernel.Invalid(fmt.Sprintf("recipients[%d]", i), "compose.check.recipient_id", "Max", directory.MaxExternalID)
		}
	}
	for _, g := range [][]string{req.Departments, req.Branches} {
		for _, name := range g {
			if strings.TrimSpace(name) == "" || len(name) > maxGroupLen {
				return kernel.Invalid("recipients", "compose.check.group_name", "Max", maxGroupLen)
			}
		}
	}
	if req.Template == "" {
		req.Text = strings.TrimSpace(req.Text)
		switch {
		case req.Text == "":
			return kernel.Invalid("content.text", "compose.check.text_required")
		case len(req.Text) > templates.MaxTextLen:
			return kernel.Invalid("content.text", "compose.check.max_bytes", "Max", templates.MaxTextLen)
		}
		if len(req.Variables) > 0 {
			return kernel.Invalid("variables", "compose.check.variables_without_template")
		}
	} else if req.Text != "" || req.Subject != "" {
		return kernel.Invalid("content", "compose.check.template_and_content")
	}
	if req.Digest != nil {
		if _, err := templates.CheckDigest(*req.Digest); err != nil {
			return err
		}
	}
	if req.TemplateVersion != 0 && req.Template == "" {
		return kernel.Invalid("template_version", "versions.pin_without_template")
	}
	if err := kernel.CheckText("content.text", req.Text, true); err != nil {
		return err
	}
	if err := kernel.CheckText("content.subject", req.Subject, false); err != nil {
		return err
	}
	for name, v := range req.Variables {
		if err := kernel.CheckText("variables."+name, v, true); err != nil {
			return err
		}
	}
	if len([]rune(req.Subject)) > maxSubjectLen {
		return kernel.Invalid("content.subject", "compose.check.max_chars", "Max", maxSubjectLen)
	}
	if req.SendAt != nil {
		switch {
		case req.SendAt.Before(now.Add(-maxPast)):
			return kernel.Invalid("send_at", "compose.check.send_at_past")
		case req.SendAt.After(now.Add(maxSchedule)):
			return kernel.Invalid("send_at", "compose.check.send_at_ahead", "Days", int(maxSchedule/(24*time.Hour)))
		}
	}
	return CheckIdempotencyKey(req.IdempotencyKey)
}

// MaxIdempotencyKeyLen is the longest idempotency key accepted.
const MaxIdempotencyKeyLen = 128

// CheckIdempotencyKey validates an idempotency key; the API checks it before claiming it.
func CheckIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKeyLen {
		return kernel.Invalid("idempotency_key", "compose.check.max_chars", "Max", MaxIdempotencyKeyLen)
	}
	return nil
}

// account finds the sending account: by id, by name, or the platform's default.
func (d *Dispatcher) account(ctx context.Context, req Request) (*sending.Account, error) {
	var (
		acct  *sending.Account
		err   error
		field = "account"
	)
	accounts := d.accounts
	if accounts == nil {
		accounts = d.store.Sending().NewAccountCache(0)
	}
	switch {
	case req.AccountID != 0:
		acct, err = accounts.ByID(ctx, req.AccountID)
	case req.Account != "":
		acct, err = accounts.ByName(ctx, req.Account)
	default:
		field = "platform"
		acct, err = accounts.Default(ctx, req.Platform)
	}
	if errors.Is(err, kernel.ErrUnreadable) {
		return nil, kernel.Invalid(field, "compose.check.account_unreadable")
	}
	if errors.Is(err, kernel.ErrNotFound) {
		if field == "platform" {
			return nil, kernel.Invalid("platform", "compose.check.no_default_account", "Platform", req.Platform)
		}
		return nil, kernel.Invalid("account", "compose.check.unknown_account")
	}
	if err != nil {
		return nil, err
	}
	if req.Platform != "" && acct.Platform != req.Platform {
		return nil, kernel.Invalid("account", "compose.check.account_platform", "Account", acct.Name, "Platform", acct.Platform, "Want", req.Platform)
	}
	if !acct.Enabled {
		return nil, kernel.Invalid(field, "compose.check.account_disabled", "Name", acct.Name)
	}
	return acct, nil
}

// who names a person in a message: name and external id.
func who(p *directory.Recipient) string {
	if p.Name == "" {
		return p.ExternalID
	}
	return p.Name + " (" + p.ExternalID + ")"
}

// resolve loads the named people, once each, in request order, rejecting unknown ones,
// then the members of the whole departments and branches named, by id. requested counts
// the people asked for: those named and the groups' members.
func (d *Dispatcher) resolve(ctx context.Context, req Request) (people []directory.Recipient, rejected models.Reasons, requested int, err error) {
	byExt, err := d.store.Directory().CachedRecipientsByExternalIDs(ctx, dedupe(req.Recipients))
	if err != nil {
		return nil, nil, 0, err
	}
	byID, err := d.store.Directory().CachedRecipientsByIDs(ctx, dedupe(req.RecipientIDs))
	if err != nil {
		return nil, nil, 0, err
	}
	// One more than allowed tells a group too large from one just large enough.
	members, err := d.store.Directory().ActiveRecipientsIn(ctx, dedupe(req.Departments), dedupe(req.Branches), directory.MaxRecipients+1)
	if err != nil {
		return nil, nil, 0, err
	}
	requested = len(req.Recipients) + len(req.RecipientIDs) + len(members)
	if requested > directory.MaxRecipients {
		return nil, nil, 0, kernel.Invalid("recipients", "compose.check.recipients_too_many", "Max", directory.MaxRecipients, "Got", requested)
	}
	if len(members) == 0 && len(req.Departments)+len(req.Branches) > 0 && len(req.Recipients)+len(req.RecipientIDs) == 0 && !req.ToOnDuty {
		return nil, nil, 0, kernel.Invalid("recipients", "compose.check.groups_empty")
	}
	ext := make(map[string]directory.Recipient, len(byExt))
	for _, p := range byExt {
		ext[p.ExternalID] = p
	}
	ids := make(map[int64]directory.Recipient, len(byID))
	for _, p := range byID {
		ids[p.ID] = p
	}
	seen := map[int64]bool{}
	add := func(p directory.Recipient) {
		if !seen[p.ID] {
			seen[p.ID] = true
			people = append(people, p)
		}
	}
	for _, id := range dedupe(req.Recipients) {
		if p, ok := ext[id]; ok {
			add(p)
		} else {
			rejected = append(rejected, models.Reason{Recipient: id, Reason: ReasonUnknownRecipient})
		}
	}
	for _, id := range dedupe(req.RecipientIDs) {
		if p, ok := ids[id]; ok {
			add(p)
		} else {
			rejected = append(rejected, models.Reason{Recipient: fmt.Sprint(id), Reason: ReasonUnknownRecipient})
		}
	}
	for _, p := range members {
		add(p)
	}
	return people, rejected, requested, nil
}

// addOnDuty adds everyone on the roster who is not named already.
func (d *Dispatcher) addOnDuty(ctx context.Context, people []directory.Recipient, roster *duty.Roster) ([]directory.Recipient, error) {
	named := make(map[int64]bool, len(people))
	for _, p := range people {
		named[p.ID] = true
	}
	var ids []int64
	for id := range roster.OnDuty {
		if !named[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	extra, err := d.store.Directory().RecipientsByIDs(ctx, ids)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(extra, func(a, b directory.Recipient) int { return strings.Compare(a.ExternalID, b.ExternalID) })
	return append(people, extra...), nil
}

// assignTasks gives each message of a batch the task that will carry it, and returns
// the tasks to enqueue once the batch is committed: a lone message joins the group of
// its priority, and when scheduled of its due time's slot (group.go; the group enqueues
// its task, so the caller must report the commit to it), a lone message due too soon
// for a scheduled group travels in a task of its own, more in chunk tasks named after
// the batch. Every message of a batch shares its priority and due time.
func (d *Dispatcher) assignTasks(b *models.Batch, msgs []models.Message) ([]tasks.Job, *group) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if m := &msgs[0]; len(msgs) == 1 {
		if m.SendAt.After(d.now()) {
			if gr := d.groups.joinScheduled(d.enqueue, m.ID, m.Priority, m.SendAt); gr != nil {
				m.TaskID = gr.job.TaskID
				return nil, gr
			}
			m.TaskID = m.ID
			return []tasks.Job{tasks.Single(m.ID, m.Priority, m.SendAt, "")}, nil
		}
		gr := d.groups.join(d.enqueue, m.ID, m.Priority, m.SendAt)
		m.TaskID = gr.job.TaskID
		return nil, gr
	}
	return chunkTasks(b, msgs), nil
}

// chunkTasks puts the messages of a batch in chunk tasks named after the batch.
func chunkTasks(b *models.Batch, msgs []models.Message) []tasks.Job {
	ids := make([]string, len(msgs))
	for i := range msgs {
		ids[i] = msgs[i].ID
	}
	jobs := tasks.Chunk(ids, msgs[0].Priority, msgs[0].SendAt, func(_ string, k int) string { return tasks.ChunkTaskID(b.ID, k) })
	i := 0
	for _, j := range jobs {
		for range j.MessageIDs {
			msgs[i].TaskID = j.TaskID
			i++
		}
	}
	return jobs
}

// Close enqueues the groups still gathering and waits for them, until ctx ends. Call it
// once no more requests come.
func (d *Dispatcher) Close(ctx context.Context) {
	d.groups.wait(ctx)
	d.writesOnce.Do(func() {}) // orders the read below after any store
	if d.writes != nil {
		d.writes.Close()
	}
}

// enqueue hands the tasks of committed messages to Asynq. A failure here loses nothing:
// the rows are pending in the database and the sweeper enqueues them later.
func (d *Dispatcher) enqueue(ctx context.Context, jobs []tasks.Job) {
	if _, err := d.enqueuer.Enqueue(ctx, jobs); err != nil {
		d.log.Warn("dispatch: enqueue failed; the sweeper will retry", "error", err, "tasks", len(jobs))
	}
}

func dedupe[T comparable](in []T) []T {
	seen := make(map[T]bool, len(in))
	out := make([]T, 0, len(in))
	for _, v := range in {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
