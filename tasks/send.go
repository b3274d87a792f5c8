package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"herald/channels"
	"herald/delivery"
	"herald/internal/batch"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// Sender delivers claimed messages. It is the handler of TypeSendMessage; NewSender
// builds it.
type Sender struct {
	store    *models.Store
	channels *channels.Registry
	enqueuer *Enqueuer
	limiter  *Limiter
	policy   delivery.Policy
	// retryScale multiplies the policy's delays when positive (SenderConfig.RetryScale).
	retryScale float64
	log        *slog.Logger
	// callTimeout bounds one provider call; lease is how long a claim holds without a
	// heartbeat (SenderConfig).
	callTimeout, lease time.Duration
	metrics            *Metrics
	stats              *models.Stats
	callbacks          *Callbacks
	fallBackSoon       func()
	foldThrottled      func(ctx context.Context, m *models.Message)
	moot               func(ctx context.Context, store *models.Store, m *models.Message) (string, error)
	accounts           *sending.AccountCache
	location           *time.Location
	now, silenceNow    func() time.Time

	claims   *batch.Batcher[string, claimResult]
	finishes *batch.Batcher[models.Finish, error]
	held     heldClaims
	silences silenceRules
}

// SenderConfig is what a Sender is built from. Store, Channels, Enqueuer, Limiter and
// Location are required: a sender without its limiter would send past the limits a
// platform enforces by dropping messages, so none can be built. Zero values of the rest
// take the defaults their comments give.
type SenderConfig struct {
	Store    *models.Store
	Channels *channels.Registry
	// Enqueuer enqueues the own task of a message that must wait inside a chunk.
	Enqueuer *Enqueuer
	// Limiter enforces account limits.
	Limiter *Limiter
	// Location is HERALD_TIMEZONE, where accounts' quiet hours are.
	Location *time.Location

	// Log defaults to slog.Default().
	Log *slog.Logger
	// CallTimeout bounds one provider call; DefaultCallTimeout when zero.
	CallTimeout time.Duration
	// Lease is how long a claim holds without a heartbeat before the sweeper may assume
	// the worker died; DefaultLease when zero. KeepLeases renews the leases of held
	// claims every Lease/5.
	Lease time.Duration
	// Policy is the retry policy; delivery.DefaultPolicy when nil.
	Policy delivery.Policy
	// RetryScale, when positive, multiplies the delays the policy gives (a platform's
	// Retry-After is kept): HERALD_TEST_KNOBS retry_scale, for tests only.
	RetryScale float64
	// Accounts caches account lookups; the process shares one with intake. A cache of
	// the sender's own (AccountCacheTTL) when nil.
	Accounts *sending.AccountCache
	// Now is the clock quiet hours are judged by; time.Now when nil.
	Now func() time.Time
	// SilenceNow is the clock the windows of silences are judged by (a recurring
	// silence's follow the duty calendar); kernel.Now when nil.
	SilenceNow func() time.Time

	// Metrics records attempts and outcomes; nil records nothing.
	Metrics *Metrics
	// Stats counts outcomes per minute for the dashboard; nil counts nothing.
	Stats *models.Stats
	// Callbacks hears of final outcomes of messages with a callback; nil: the recovery
	// pass finds their events.
	Callbacks *Callbacks
	// FallBackSoon, when set, has the next messages of chains whose message stopped made
	// in the background; it must return at once (the recovery pass makes them too).
	FallBackSoon func()
	// FoldThrottled, when set, hears of each post to a chat group given back to wait for
	// its account's limit, after its row says so: the group's waiting posts may fold
	// into one (dispatch.FoldThrottled).
	FoldThrottled func(ctx context.Context, m *models.Message)
	// Moot, when set, is asked just before the platform call of a message of an alert
	// whether the message is still wanted (phone.Book.Moot: a call whose alert ended
	// while this worker held it): a reason stops the message without a call.
	Moot func(ctx context.Context, store *models.Store, m *models.Message) (reason string, err error)
}

// DefaultCallTimeout bounds one provider call unless told otherwise
// (HERALD_SEND_TIMEOUT's default).
const DefaultCallTimeout = 15 * time.Second

// heldClaims are the claims this worker holds, message id → claim token, for the
// heartbeat.
type heldClaims struct {
	mu sync.Mutex
	m  map[string]string
}

func (h *heldClaims) add(id, token string) {
	h.mu.Lock()
	if h.m == nil {
		h.m = map[string]string{}
	}
	h.m[id] = token
	h.mu.Unlock()
}

func (h *heldClaims) drop(id string) {
	h.mu.Lock()
	delete(h.m, id)
	h.mu.Unlock()
}

// snapshot returns the held message ids and their distinct claim tokens.
func (h *heldClaims) snapshot() (ids, tokens []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	for id, token := range h.m {
		ids = append(ids, id)
		if !seen[token] {
			seen[token] = true
			tokens = append(tokens, token)
		}
	}
	return ids, tokens
}

type claimResult struct {
	m   *models.Message
	err error
}

// Batching: a few runners, so batches overlap the database round trips of one another.
const (
	batchRunners = 3
	batchMax     = 64
)

// DefaultLease is how long a claim outlives its worker's last heartbeat. It does not
// depend on the call timeout: a live worker renews its leases however long a call takes.
// Renewals come every Lease/5, so a busy database can delay or lose three of them before
// a live worker's claim could be taken for a dead one's (and its message sent twice);
// a dead worker's claims go back to the queue 12 to 15 s after its last renewal, plus
// the sweeper's 3 s.
const DefaultLease = 15 * time.Second

// NewSender returns a send handler built from cfg, or an error naming the required part
// cfg lacks. Run KeepLeases beside it for as long as it handles tasks, and Close it once
// the worker has stopped.
func NewSender(cfg SenderConfig) (*Sender, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("tasks: a sender needs a store")
	case cfg.Channels == nil:
		return nil, errors.New("tasks: a sender needs the channel registry")
	case cfg.Enqueuer == nil:
		return nil, errors.New("tasks: a sender needs an enqueuer")
	case cfg.Limiter == nil:
		return nil, errors.New("tasks: a sender needs a rate limiter: it never sends unlimited")
	case cfg.Location == nil:
		return nil, errors.New("tasks: a sender needs the time zone of quiet hours")
	}
	s := &Sender{store: cfg.Store, channels: cfg.Channels, enqueuer: cfg.Enqueuer, limiter: cfg.Limiter,
		policy: cfg.Policy, retryScale: cfg.RetryScale, log: cfg.Log, callTimeout: cfg.CallTimeout, lease: cfg.Lease,
		metrics: cfg.Metrics, stats: cfg.Stats, callbacks: cfg.Callbacks, fallBackSoon: cfg.FallBackSoon,
		foldThrottled: cfg.FoldThrottled, moot: cfg.Moot,
		accounts: cfg.Accounts, location: cfg.Location, now: cfg.Now, silenceNow: cfg.SilenceNow}
	if s.policy == nil {
		s.policy = delivery.DefaultPolicy
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.callTimeout <= 0 {
		s.callTimeout = DefaultCallTimeout
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.accounts == nil {
		s.accounts = cfg.Store.Sending().NewAccountCache(AccountCacheTTL)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.silenceNow == nil {
		s.silenceNow = kernel.Now
	}
	s.claims = batch.New(batchRunners, batchMax, s.claimBatch)
	// Outcomes group as the intake's writes do (batch.Commits): a fan-out's finishes are
	// full batches either way, but lone messages would finish a few at a time, each
	// with a commit of its own.
	s.finishes = batch.NewGrouping(batchRunners, batchMax, batch.Commits, cfg.Store.FinishAttempts)
	return s, nil
}

// AccountCacheTTL is how long a worker or intake trusts an account it read: an edit in
// another process reaches them within it.
const AccountCacheTTL = 5 * time.Second

// Close stops the claim and finish batchers. Call it only after the worker has shut
// down: a task still running would find them gone.
func (s *Sender) Close() {
	s.claims.Close()
	s.finishes.Close()
}

// claimBatch claims a batch of messages under one lease, once those an active silence
// matches are held. A message can be in a batch twice, when two of its tasks run at once
// (the sweeper's second task beside a stale one): one claim covers both, so only its
// first task gets it.
func (s *Sender) claimBatch(ctx context.Context, ids []string) []claimResult {
	out := make([]claimResult, len(ids))
	// A silence that cannot be read may hold these: claim none of them, and the tasks
	// run again.
	var found map[string]*models.Message
	var token string
	err := s.holdSilenced(ctx, ids)
	if err == nil {
		found, token, err = s.store.ClaimMany(ctx, ids, kernel.Now().Add(s.lease))
	}
	// Two tasks of one message (a dead worker's and its replacement) can meet in a
	// batch: only the first holds the claim.
	given := make(map[string]bool, len(ids))
	for i, id := range ids {
		m := found[id]
		switch {
		case err != nil:
			out[i].err = err
		case m == nil:
			out[i].err = kernel.ErrNotFound
		case given[id]:
			held := *m // the claiming task's handler owns m
			out[i] = claimResult{m: &held, err: kernel.ErrStateChanged}
		case !m.Claimed(token):
			out[i] = claimResult{m: m, err: kernel.ErrStateChanged}
		default:
			out[i].m = m
			given[id] = true
			s.held.add(id, token)
		}
	}
	return out
}

// KeepLeases renews the leases of every claim this worker holds, every Lease/5, with one
// UPDATE for all of them, until ctx ends. A worker that dies stops renewing, and the
// sweeper's recovery finds its claims within a lease and a few seconds. Stop it only
// after the worker has finished its tasks.
func (s *Sender) KeepLeases(ctx context.Context) {
	kernel.Every(ctx, s.lease/5, func() {
		ids, tokens := s.held.snapshot()
		if len(ids) == 0 {
			return
		}
		slices.Sort(ids) // the order InnoDB locks them in anyway
		// A renewal may take longer than the interval on a slow database: the ticker
		// drops the ticks it misses, and one renewal that lands keeps every claim.
		rctx, cancel := context.WithTimeout(ctx, s.lease/3)
		_, err := s.store.RenewLeases(rctx, ids, tokens, kernel.Now().Add(s.lease))
		cancel()
		if err != nil {
			s.log.Warn("renew claim leases", "claims", len(ids), "error", err)
		}
	})
}

// ProcessTask implements asynq.Handler for TypeSendMessage: a task carries one message
// or a chunk of them.
func (s *Sender) ProcessTask(ctx context.Context, t *asynq.Task) error {
	p, err := parseSendPayload(t.Payload())
	if err != nil {
		return err
	}
	if ids := p.IDs(); len(ids) > 1 {
		return s.sendChunk(ctx, ids)
	}
	return s.sendOne(ctx, p.IDs()[0])
}

// sendOne delivers a message carried by a task of its own: claim, deliver, record. A
// message that must wait is retried by its task, after the delay the outcome gives.
func (s *Sender) sendOne(ctx context.Context, id string) error {
	claim := s.claims.Do(id)
	m, err := claim.m, claim.err
	switch {
	case errors.Is(err, kernel.ErrStateChanged):
		return notClaimed(m)
	case errors.Is(err, kernel.ErrNotFound):
		return nil // deleted; nothing to do
	case err != nil:
		return err
	}
	// However the task ends (a panic too), this worker stops renewing the claim.
	defer s.held.drop(m.ID)
	o := s.deliver(ctx, m)
	if err := s.record(m, o); err != nil {
		return err
	}
	if mustWait(o) {
		return &retryError{delay: time.Until(*o.NextAttemptAt), reason: o.ErrorClass}
	}
	return nil
}

// chunkParallel is how many messages of one chunk are delivered at once. With the
// worker's concurrency of tasks it bounds the calls in flight; a chunk of ChunkSize
// messages at a few milliseconds a call finishes in well under a second, so a
// high-priority task never waits long for a free slot.
const chunkParallel = 8

// sendChunk delivers the messages a chunk task carries: one claim for all of them, each
// delivered on its own (chunkParallel at a time), outcomes recorded in batches. A message
// the chunk could not claim is finished, held by another task, or waiting for a task of
// its own: that task sees to it. A message that must wait (a retry, a throttle) moves to a
// task of its own with its own delay; the chunk is never run again for one message.
func (s *Sender) sendChunk(ctx context.Context, ids []string) error {
	var held []*models.Message
	var errs []error
	for _, c := range s.claimBatch(ctx, ids) {
		switch {
		case c.err == nil:
			held = append(held, c.m)
		case errors.Is(c.err, kernel.ErrStateChanged), errors.Is(c.err, kernel.ErrNotFound):
		default:
			errs = append(errs, c.err)
		}
	}
	if len(errs) > 0 && len(held) == 0 {
		// The database failed the claim: Asynq runs the chunk again later.
		return errs[0]
	}
	// The messages of a group of lone intakes fall due over a few milliseconds (a
	// scheduled group) and may belong to several accounts: each account's go side by
	// side, each in due order, so that none waits inside the chunk behind a later one.
	slices.SortStableFunc(held, func(a, b *models.Message) int { return dueOf(a).Compare(dueOf(b)) })
	var wg sync.WaitGroup
	for _, ms := range byAccount(held) {
		wg.Go(func() { s.sendAccount(ctx, ms) })
	}
	wg.Wait()
	return nil
}

// dueOf is when a claimed message may be sent.
func dueOf(m *models.Message) time.Time {
	if m.NextAttemptAt == nil {
		return time.Time{}
	}
	return *m.NextAttemptAt
}

// byAccount splits messages by account, keeping their order within each.
func byAccount(ms []*models.Message) [][]*models.Message {
	var out [][]*models.Message
	at := map[int64]int{}
	for _, m := range ms {
		i, ok := at[m.AccountID]
		if !ok {
			i = len(out)
			at[m.AccountID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], m)
	}
	return out
}

// sendAccount delivers a chunk's messages of one account: in groups when its platform
// takes them, else chunkWidth at a time.
func (s *Sender) sendAccount(ctx context.Context, held []*models.Message) {
	if gs := s.groupSender(ctx, held); gs != nil {
		s.sendGrouped(ctx, gs, held)
		return
	}
	next := make(chan *models.Message)
	var wg sync.WaitGroup
	for range min(s.chunkWidth(ctx, held), len(held)) {
		wg.Go(func() {
			for m := range next {
				s.deliverInChunk(ctx, m)
			}
		})
	}
	for _, m := range held {
		next <- m
	}
	close(next)
	wg.Wait()
}

// chunkWidth is how many of a chunk's messages of one account go at once:
// chunkParallel, or one for an account with limits. A limited account cannot go faster
// than its limits anyway, and every call admitted but not yet made is a call the
// platform may see late, bunched with later ones, against a window that is only widened
// by the limiter's margin: fewer calls waiting for the CPU keep that gap short.
func (s *Sender) chunkWidth(ctx context.Context, held []*models.Message) int {
	if len(held) == 0 {
		return chunkParallel
	}
	acct, err := s.accounts.ByID(ctx, held[0].AccountID)
	if err == nil && acct.Limits == (delivery.Limits{}) {
		return chunkParallel
	}
	return 1
}

// deliverInChunk delivers one message of a chunk and records its outcome; one that must
// wait is enqueued on a task of its own, due when the outcome says.
func (s *Sender) deliverInChunk(ctx context.Context, m *models.Message) {
	s.finishInChunk(ctx, m, s.deliver(ctx, m))
}

// finishInChunk records the outcome of a chunk's message; one that must wait is
// enqueued on a task of its own, due when the outcome says.
func (s *Sender) finishInChunk(ctx context.Context, m *models.Message, o models.Outcome) {
	defer s.held.drop(m.ID)
	own := mustWait(o)
	if own {
		o.TaskID = SendTaskID(m.ID, "")
	}
	if err := s.record(m, o); err != nil || !own {
		return
	}
	// Enqueued after its row says so; should Redis refuse it, the sweeper finds the task
	// missing and enqueues the message again.
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.enqueuer.Enqueue(ectx, []Job{Single(m.ID, m.Priority, *o.NextAttemptAt, "")}); err != nil {
		s.log.Warn("enqueue a message's own task; the sweeper will", "message_id", m.ID, "error", err)
	}
}

// mustWait says an outcome leaves its message to be sent again, at o.NextAttemptAt.
func mustWait(o models.Outcome) bool {
	return o.Status == models.StatusFailed || o.Status == models.StatusPending
}

// deliver takes a claimed message through its attempt: wait until it is due, find its
// account, admit it under the account's limits, call the platform, and classify what
// happened. It returns the outcome to record.
func (s *Sender) deliver(ctx context.Context, m *models.Message) models.Outcome {
	for tries := 1; ; tries++ {
		acct, sender, adm, o, ready := s.prepare(ctx, m, nil)
		if !ready {
			return o
		}
		// A worker so starved that its admissions keep going stale gives the message
		// back (pending, due now) rather than spin here.
		if o, late := s.call(ctx, m, acct, sender, adm); !late || tries == maxLateStarts {
			return o
		}
	}
}

// prepare takes a claimed message up to its provider call: wait until it is due, find
// its account and adapter, and admit it under the account's limits. It returns them and
// true when the call may be made, else the outcome to record. beforeWait, when set, runs
// before the limiter's answer is waited for in the worker.
func (s *Sender) prepare(ctx context.Context, m *models.Message, beforeWait func()) (*sending.Account, channels.Sender, *Admission, models.Outcome, bool) {
	if ctx.Err() != nil {
		// The worker is stopping before this message's turn: give it back, due now,
		// without using an attempt.
		next := kernel.Now()
		return nil, nil, nil, models.Outcome{Status: models.StatusPending, ErrorClass: string(channels.Throttled),
			Error: "worker stopping", NextAttemptAt: &next}, false
	}
	// A task may start before some of its messages are due (a scheduled group is due
	// when its earliest member is; the claim allows a second early): wait for the due
	// time itself, so that a scheduled send never goes out early.
	if m.NextAttemptAt != nil {
		if wait := time.Until(*m.NextAttemptAt); wait > 0 {
			// Messages already admitted go now: their admissions must not age.
			if beforeWait != nil {
				beforeWait()
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
	}
	acct, err := s.accounts.ByID(ctx, m.AccountID)
	if err != nil {
		return nil, nil, nil, s.failure(m, acct, &channels.Error{Class: channels.Permanent, Err: err}, false, time.Time{}, 0), false
	}
	if !acct.Enabled {
		// A disabled account holds its messages rather than failing them.
		next := kernel.Now().Add(time.Minute)
		return nil, nil, nil, models.Outcome{Status: models.StatusFailed, ErrorClass: string(channels.Throttled),
			Error: "account " + acct.Name + " is disabled", NextAttemptAt: &next}, false
	}
	if o, wait := s.quietHours(m, acct); wait {
		return nil, nil, nil, o, false
	}
	if o, stop := s.mootNow(ctx, m); stop {
		return nil, nil, nil, o, false
	}
	sender, err := s.channels.Sender(acct.Channel())
	if err != nil {
		return nil, nil, nil, s.failure(m, acct, &channels.Error{Class: channels.Permanent, Err: err}, false, time.Time{}, 0), false
	}
	o, adm, wait := s.admit(ctx, m, acct, beforeWait)
	if wait {
		return nil, nil, nil, o, false
	}
	return acct, sender, adm, models.Outcome{}, true
}

// mootNow stops a message of an alert that is no longer wanted (SenderConfig.Moot)
// before its platform call, without an attempt. A check that fails lets the call go
// ahead: a call too many is better than an alert nobody hears of.
func (s *Sender) mootNow(ctx context.Context, m *models.Message) (models.Outcome, bool) {
	if s.moot == nil || m.AlertID == nil {
		return models.Outcome{}, false
	}
	reason, err := s.moot(ctx, s.store, m)
	if err != nil {
		s.log.Warn("could not tell whether an alert's call is still wanted; placing it", "message", m.ID, "error", err)
		return models.Outcome{}, false
	}
	if reason == "" {
		return models.Outcome{}, false
	}
	return models.Outcome{Status: models.StatusStopped, ErrorClass: string(channels.Permanent), Error: "not placed: " + reason}, true
}

// alertActions are the buttons of a notice of an alert (a WeCom card shows them); none
// for other messages.
func alertActions(m *models.Message) []channels.Action {
	if m.AlertID == nil {
		return nil
	}
	return channels.AlertActions()
}

// maxLateStarts is how many admissions one delivery may see go stale before the
// message is given back to wait as throttled.
const maxLateStarts = 3

// call makes the provider call and classifies its result. An admission (nil for an
// account without limits) is used only if the request's first byte leaves while it is
// fresh: when it went stale first, nothing was sent, the admission is given back and
// call reports late, for the caller to ask again.
func (s *Sender) call(ctx context.Context, m *models.Message, acct *sending.Account, sender channels.Sender, adm *Admission) (models.Outcome, bool) {
	callCtx, cancel := context.WithTimeout(ctx, s.callTimeout)
	if adm != nil {
		callCtx = channels.WithStartCheck(callCtx, adm.StartCheck)
	}
	cm := channelMessage(m)
	if adm != nil {
		cm.Robot = adm.Robot()
	}
	started := time.Now()
	receipt, err := sender.Send(callCtx, cm)
	took := time.Since(started)
	cancel()
	if adm != nil && errors.Is(err, channels.ErrLateStart) {
		return s.lateStart(m, acct, adm, err)
	}
	s.holdRobotAfter(acct, adm, err)
	return s.outcome(m, acct, receipt, err, started, took), false
}

// lateStart gives back an admission that went stale before its call's first byte.
// Should Redis not take it back, the entry stays counted for a call never made, which
// only costs capacity: the message waits as throttled rather than risk the limit.
func (s *Sender) lateStart(m *models.Message, acct *sending.Account, adm *Admission, err error) (models.Outcome, bool) {
	s.metrics.throttle(acct.Name, WindowLate)
	s.log.Debug("admission went stale before the call started; asking again", "message_id", m.ID, "account", acct.Name, "error", err)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rerr := s.limiter.Release(rctx, adm); rerr != nil {
		s.log.Warn("give back a stale admission", "message_id", m.ID, "error", rerr)
	}
	next := kernel.Now()
	return models.Outcome{Status: models.StatusPending, ErrorClass: string(channels.Throttled),
		Error: "waiting for " + WindowLate + " capacity", NextAttemptAt: &next}, true
}

// channelMessage is what an adapter is given of a message.
func channelMessage(m *models.Message) channels.Message {
	code, params := models.ProviderTemplateOf(m.ProviderTemplate)
	return channels.Message{ID: m.ID, To: m.Address, MsgType: m.MsgType, Title: m.Subject, Content: m.Content, HTML: m.ContentHTML,
		Actions: alertActions(m), Group: m.ChatGroupID != nil, Mentions: models.MentionsOf(m.Mentions),
		ProviderTemplate: code, Params: params}
}

// outcome classifies what a provider call made of a message, started at started and
// taking took, into the outcome to record.
func (s *Sender) outcome(m *models.Message, acct *sending.Account, receipt channels.Receipt, err error, started time.Time, took time.Duration) models.Outcome {
	if err == nil {
		if !acct.Healthy {
			s.setHealth(acct, true, "")
		}
		s.logAttempt(m, acct, "", "sent", took, "")
		s.metrics.attempt(acct.Platform, acct.Name, "sent", took)
		s.metrics.final(acct.Platform, acct.Name, string(models.StatusSent))
		s.stats.Count(acct.ID, "sent", 1)
		return models.Outcome{Status: models.StatusSent, ProviderMessageID: receipt.ProviderMessageID,
			CountsAttempt: true, Called: true, StartedAt: started.UTC(), Duration: took}
	}
	ce := channels.Classify(err)
	if ce.Class == channels.Auth {
		// Flag the account for operators; the adapter drops cached credentials, and the
		// policy retries once, five minutes later.
		s.setHealth(acct, false, ce.Error())
	}
	s.logAttempt(m, acct, ce.Class, "failed", took, ce.Error())
	s.metrics.attempt(acct.Platform, acct.Name, string(ce.Class), took)
	o := s.failure(m, acct, ce, true, started.UTC(), took)
	s.stats.Count(acct.ID, "failed", 1)
	if o.Status == models.StatusStopped {
		s.metrics.final(acct.Platform, acct.Name, string(models.StatusStopped))
		s.stats.Count(acct.ID, "stopped", 1)
	}
	return o
}

// logAttempt writes the log line of one provider call (errText "" for none). There is
// one for every message sent, so the record goes to the handler directly: Logger.Info
// would also capture the caller's program counter, which Herald's handlers never print
// (NewLogger sets no AddSource), and box each argument; this costs a third less.
func (s *Sender) logAttempt(m *models.Message, acct *sending.Account, class channels.Class, outcome string, took time.Duration, errText string) {
	ctx := context.Background()
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "attempt", 0)
	r.AddAttrs(slog.String("message_id", m.ID), slog.String("account", acct.Name), slog.String("class", string(class)),
		slog.Int64("duration_ms", took.Milliseconds()), slog.String("outcome", outcome))
	if errText != "" {
		r.AddAttrs(slog.String("error", errText))
	}
	_ = s.log.Handler().Handle(ctx, r)
}

// failure turns a classified error into the message's next state, by the retry policy
// with the account's adjustments (delivery.Policy.Decide).
func (s *Sender) failure(m *models.Message, acct *sending.Account, ce *channels.Error, called bool, started time.Time, took time.Duration) models.Outcome {
	policy := s.policy
	if acct != nil {
		policy = policy.With(acct.RetryPolicy)
	}
	v := policy.Decide(delivery.Failure{Class: ce.Class, Ambiguous: ce.Ambiguous, RetryAfter: ce.RetryAfter,
		Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, ClassRetries: m.RetriesOf(string(ce.Class))})
	o := models.Outcome{Status: v.Status, Unknown: v.Unknown, ErrorClass: string(ce.Class), Error: ce.Error(), ProviderCode: ce.Code,
		CountsAttempt: v.CountsAttempt, ClassRetries: v.ClassRetries, Called: called, StartedAt: started, Duration: took}
	if v.Status == models.StatusFailed {
		if s.retryScale > 0 && ce.RetryAfter <= 0 {
			v.Delay = time.Duration(float64(v.Delay) * s.retryScale)
		}
		next := kernel.Now().Add(v.Delay)
		o.NextAttemptAt = &next
	}
	return o
}

// record writes the outcome, batched with other tasks' outcomes.
func (s *Sender) record(m *models.Message, o models.Outcome) error {
	// The heartbeat leaves a finishing claim alone: its row is locked by the finish's
	// transaction, and a renewal waiting on (or deadlocking with) it would delay every
	// other renewal. The lease has most of its time left; the finish takes milliseconds.
	s.held.drop(m.ID)
	// Recorded with the batch's own context, not the task's: the provider call has
	// already happened, and a shutdown must not lose its outcome.
	if err := s.finishes.Do(models.Finish{Message: m, Outcome: o}); err != nil {
		// The row stays sending; the sweeper returns it to failed when the lease ends.
		return fmt.Errorf("tasks: %w", err)
	}
	if m.CallbackKeyID != nil && o.Status.Terminal() {
		s.callbacks.Kick(*m.CallbackKeyID)
	}
	if o.Status == models.StatusStopped && m.Fallback != "" && s.fallBackSoon != nil {
		s.fallBackSoon()
	}
	if o.Status == models.StatusPending && o.ErrorClass == string(channels.Throttled) && m.ChatGroupID != nil && s.foldThrottled != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.foldThrottled(ctx, m)
	}
	return nil
}

// notClaimed decides what a task does when its message was not claimable. A message
// can have two tasks (the sweeper's second beside one a failover left stale), so a task
// lets go only of a finished message: another task of it may hold it now and stop
// holding it without carrying it on.
func notClaimed(m *models.Message) error {
	now := kernel.Now()
	switch {
	case m == nil || m.Status.Terminal() || m.Status == models.StatusHeld:
		// A held message gets a task of its own when its silences end.
		return nil
	case m.Status == models.StatusSending && m.LeaseUntil != nil:
		// Another task holds it, usually for a second or two; if its worker died, the
		// lease ends and the message can be claimed again.
		return &retryError{delay: min(m.LeaseUntil.Sub(now)+time.Second, recheckClaimed), reason: "claimed elsewhere"}
	case m.NextAttemptAt != nil && m.NextAttemptAt.After(now):
		return &retryError{delay: m.NextAttemptAt.Sub(now), reason: "not due"}
	}
	// Due and free: another task claimed and released it between our claim and our read.
	return &retryError{delay: time.Second, reason: "released meanwhile"}
}

// recheckClaimed is how often a task looks again at a message another task holds.
const recheckClaimed = 5 * time.Second

// setHealth records an account's health and drops it from the cache so the next message
// sees the change.
func (s *Sender) setHealth(acct *sending.Account, healthy bool, note string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.store.Sending().SetAccountHealth(ctx, acct.ID, healthy, note); err != nil {
		s.log.Warn("record account health", "account", acct.Name, "error", err)
	}
	s.accounts.Forget()
}

// quietHours holds a normal or low message inside its account's quiet hours: pending,
// due when they end, with no attempt used.
func (s *Sender) quietHours(m *models.Message, acct *sending.Account) (models.Outcome, bool) {
	hold, until := delivery.QuietHours(acct.QuietHours).Holds(m.Priority, s.now(), s.location)
	if !hold {
		return models.Outcome{}, false
	}
	return models.Outcome{Status: models.StatusPending, ErrorClass: delivery.ErrorClassQuietHours,
		Error: "quiet hours of account " + acct.Name + " until " + until.In(s.location).Format("2006-01-02 15:04"), NextAttemptAt: &until}, true
}

// Waiting for rate-limit capacity: short waits are slept through in the worker (Asynq
// schedules in whole seconds, far too coarse for per-second limits); longer ones give
// the message back, pending, due when capacity frees.
const (
	maxInlineWait   = time.Second
	throttleJitter  = 30 * time.Millisecond
	limiterDownWait = 5 * time.Second
)

// admit asks the limiter for a call slot and returns its admission (nil for an account
// without limits; for a group robot account, one naming the robot of its pool). When the message must wait longer than maxInlineWait, or the limiter
// cannot be reached, it returns the outcome that reschedules the message and true: a
// message never goes out unlimited. beforeWait, when set, runs before the worker waits
// for capacity.
func (s *Sender) admit(ctx context.Context, m *models.Message, acct *sending.Account, beforeWait func()) (models.Outcome, *Admission, bool) {
	waited := time.Duration(0)
	for {
		d, err := s.acquireFor(ctx, m, acct)
		if err != nil {
			s.log.Warn("rate limiter unavailable; holding the message", "message_id", m.ID, "error", err)
			next := kernel.Now().Add(limiterDownWait)
			return models.Outcome{Status: models.StatusPending, ErrorClass: string(channels.Throttled),
				Error: "rate limiter unavailable: " + err.Error(), NextAttemptAt: &next}, nil, true
		}
		if d.Allowed {
			return models.Outcome{}, d.Admission, false
		}
		s.metrics.throttle(acct.Name, d.Window)
		jitter := time.Duration(rand.Int64N(int64(throttleJitter)))
		if waited+d.Wait > maxInlineWait {
			next := kernel.Now().Add(d.Wait + jitter)
			return models.Outcome{Status: models.StatusPending, ErrorClass: string(channels.Throttled),
				Error: "waiting for " + d.Window + " capacity", NextAttemptAt: &next}, nil, true
		}
		if beforeWait != nil {
			beforeWait()
		}
		select {
		case <-ctx.Done():
			next := kernel.Now()
			return models.Outcome{Status: models.StatusPending, ErrorClass: string(channels.Throttled),
				Error: "worker stopping", NextAttemptAt: &next}, nil, true
		case <-time.After(d.Wait + jitter):
		}
		waited += d.Wait + jitter
	}
}
