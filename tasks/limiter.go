package tasks

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"herald/delivery"
	"herald/models"
)

// Limiter enforces each account's send limits across every worker process.
//
// The guarantee is strict: for every account and every window length W with a limit L,
// no interval of length W contains more than L provider calls (and likewise per
// recipient). A fixed-window counter lets 2L through across a window boundary, and GCRA
// with burst = L lets up to 2L−1 through in some window, so neither is used. Instead
// each account keeps a sliding log: a Redis sorted set of the times of its calls within
// its longest window. A call is admitted only if, for every window, the calls already in
// (now−W, now] number fewer than L; the check and the append run in one Lua script
// against Redis's own clock (TIME), so several workers on several machines can neither
// race nor disagree about time. When a call is refused the script also says when the
// earliest blocking call leaves its window, which is exactly when capacity frees.
//
// Memory: one sorted-set entry (~80 bytes) per call within the account's longest limited
// window, e.g. a per_day limit of 50,000 costs about 4 MB; per-recipient logs hold at
// most the per-recipient daily limit each and expire a day after the person's last
// message. Windows are widened by Margin so that network jitter between this check and
// the platform's receipt cannot make the platform see a violation.
type Limiter struct {
	rdb    redis.UniversalClient
	script *redis.Script
	// Margin widens every window (DefaultMargin). With none at all every admission
	// comes back late and is refused.
	Margin time.Duration
	// replicas is how many replicas must hold an admission before it is used; 0 uses it
	// at once. Under Sentinel a failover promotes a replica while clients still write
	// to the old master for a second or two, and what they write there is lost: a call
	// admitted there would vanish from the logs and the new master would admit its
	// capacity again. With one replica such an admission, never acknowledged, is taken
	// back and refused (WindowUnreplicated). Only for a client of one master: a Cluster
	// client would send the WAIT to a random node. Redis.AdmissionReplicas sets it.
	replicas int
	// sole, under Sentinel, lets a master with no replica at all use admissions once
	// every sentinel names it (soleMaster): after a failover with one replica, limited
	// accounts do not wait for the old master to rejoin.
	sole *soleMaster
	// now, when set, replaces Redis's clock (LimiterConfig.Now).
	now func() time.Time
	// robotTurn is where the next choice of a robot of a pool starts (AcquireRobot).
	robotTurn atomic.Uint64
}

//go:embed limiter.lua
var limiterLua string

// DefaultMargin is how much a limiter widens windows unless told otherwise. An
// admission is only used if it reached the worker within half of it (see Acquire),
// which leaves the other half for the call to reach the platform.
const DefaultMargin = 50 * time.Millisecond

// LimiterConfig is what a Limiter is built from.
type LimiterConfig struct {
	// Redis is the deployment the limiter's connection goes to (required): its
	// topology says how many replicas must hold an admission (Redis.AdmissionReplicas).
	Redis *Redis
	// Client is the limiter's connection; a client of Redis of its own when nil.
	Client redis.UniversalClient
	// Margin widens every window; DefaultMargin when zero.
	Margin time.Duration
	// Now, for tests only, replaces Redis's clock as the time of the logs and of
	// robots' holds, so a test can move a minute on without waiting for it; nil uses
	// Redis's own clock (TIME), which every worker shares.
	Now func() time.Time
}

// NewLimiter returns a limiter built from cfg, or an error when cfg names no Redis.
func NewLimiter(cfg LimiterConfig) (*Limiter, error) {
	if cfg.Redis == nil {
		return nil, errors.New("tasks: a rate limiter needs its Redis")
	}
	l := &Limiter{rdb: cfg.Client, script: redis.NewScript(limiterLua), Margin: cfg.Margin,
		replicas: cfg.Redis.AdmissionReplicas(), sole: cfg.Redis.soleMaster(), now: cfg.Now}
	if l.rdb == nil {
		l.rdb = cfg.Redis.NewClient(0)
	}
	if l.Margin <= 0 {
		l.Margin = DefaultMargin
	}
	return l, nil
}

// window is one limited window length and its limit.
type window struct {
	name  string
	len   time.Duration
	limit int
}

func accountWindows(l delivery.Limits) []window { return windowsOf(l, false) }

func recipientWindows(l delivery.Limits) []window { return windowsOf(l, true) }

// windowsOf lists the set limits that count all messages, or one person's.
func windowsOf(l delivery.Limits, perRecipient bool) []window {
	var out []window
	for _, w := range delivery.LimitWindows {
		if n := *w.Of(&l); n > 0 && w.PerRecipient == perRecipient {
			out = append(out, window{w.Name, w.Len, n})
		}
	}
	return out
}

// Decision is the limiter's answer for one call.
type Decision struct {
	Allowed bool
	// Admission is the admitted call's entry in the logs; nil when refused or when the
	// account has no limits.
	Admission *Admission
	// Wait is how long until the call would be admitted, when it is not.
	Wait time.Duration
	// Window names the limit that refused it (or WindowLate).
	Window string
}

// WindowLate names a refusal of an admission that reached the worker too late to use.
const WindowLate = "late_admission"

// WindowUnreplicated names a refusal of an admission that no replica acknowledged in
// time (see LimiterConfig.Redis).
const WindowUnreplicated = "unreplicated_admission"

// Acquire asks to make one call for a message of the account to a recipient address.
// It records the call when admitted. A message of lower priority is refused while a
// more urgent one of the same account is waiting for capacity, so a saturated account
// sends high before normal before low.
//
// An admission is stamped with Redis's clock when the script runs. If its answer takes
// longer than half the margin to come back (a stalled worker, a slow link, a wait for a
// connection), the call could reach the platform outside the margin the windows were
// widened by: such an admission is taken back out of the logs and reported as refused
// (WindowLate), to be asked for again. Removing a call that is never made cannot let a
// window exceed its limit. Likewise an admission that not enough replicas acknowledged
// in that time (see Replicas).
func (l *Limiter) Acquire(ctx context.Context, accountID int64, limits delivery.Limits, recipient string, priority models.Priority, token string) (Decision, error) {
	return l.acquire(ctx, limiterKeys(accountID, recipient), limits, priority, token)
}

// acquire is Acquire on the logs keys name (see limiterKeys).
func (l *Limiter) acquire(ctx context.Context, keys []string, limits delivery.Limits, priority models.Priority, token string) (Decision, error) {
	aw, rw := accountWindows(limits), recipientWindows(limits)
	if len(aw) == 0 && len(rw) == 0 {
		return Decision{Allowed: true}, nil
	}
	// Each call is its own log entry, even for the same message sent again in a window.
	member := token + ":" + strconv.FormatUint(rand.Uint64(), 36)
	args := []any{member, priority.Rank(), len(aw)}
	for _, w := range aw {
		args = append(args, (w.len + l.Margin).Microseconds(), w.limit)
	}
	args = append(args, len(rw))
	for _, w := range rw {
		args = append(args, (w.len + l.Margin).Microseconds(), w.limit)
	}
	if l.now != nil {
		args = append(args, l.now().UnixMicro())
	}
	asked := time.Now()
	res, held, err := l.run(ctx, keys, args)
	if err != nil {
		return Decision{}, fmt.Errorf("tasks: rate limiter: %w", err)
	}
	if res[0] == 1 {
		a := &Admission{keys: keys[:2], member: member, asked: asked, margin: l.Margin}
		late := a.Stale()
		if !late && held {
			return Decision{Allowed: true, Admission: a}, nil
		}
		window := WindowLate
		if !held {
			window = WindowUnreplicated
		}
		// A master that lost its replicas may refuse the removal, or lose it with the
		// rest it never replicated: neither can let a window exceed its limit.
		if err := l.Release(ctx, a); err != nil && late {
			return Decision{}, err
		}
		return Decision{Wait: l.Margin, Window: window}, nil
	}
	d := Decision{Wait: time.Duration(res[1]) * time.Microsecond}
	switch i := int(res[2]); {
	case i < 0:
		d.Window = "priority"
	case i < len(aw):
		d.Window = aw[i].name
	default:
		d.Window = rw[i-len(aw)].name
	}
	return d, nil
}

// Admission is one admitted call's entry in the account's and the recipient's logs.
// It may be used only while fresh: the windows are widened by the margin, half of it
// for the admission to reach the request's first byte and half for that byte to reach
// the platform. A call not made on it is taken back with Release.
type Admission struct {
	keys   []string
	member string
	// asked is when the worker asked, a little before Redis stamped the entry: the
	// admission's age is never underestimated.
	asked  time.Time
	margin time.Duration
	// robot is the robot of a group robot account's pool the call goes through.
	robot int
}

// Stale says the admission is too old to start a call on now. One that holds no entry
// (a robot chosen for an account without limits) never is.
func (a *Admission) Stale() bool { return a.keys != nil && time.Since(a.asked) > a.margin/2 }

// StartCheck refuses a call's start once the admission is stale; a channels adapter
// runs it at the request's first byte (channels.WithStartCheck).
func (a *Admission) StartCheck() error {
	if a.Stale() {
		return fmt.Errorf("admission %s old, more than half the limiter's margin of %s", time.Since(a.asked).Round(time.Millisecond), a.margin)
	}
	return nil
}

// Release takes the entry of a call that was never made out of the logs, giving its
// capacity back. Removing a call that was not made can never let a window exceed its
// limit; removing one that was made could, so only a call known not to have left may
// be released.
func (l *Limiter) Release(ctx context.Context, a *Admission) error {
	if len(a.keys) == 0 {
		return nil
	}
	pipe := l.rdb.Pipeline()
	for _, k := range a.keys {
		pipe.ZRem(ctx, k, a.member)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("tasks: rate limiter: taking back an unused admission: %w", err)
	}
	return nil
}

// run runs the limiter script and, when admissions must be held by replicas, WAIT in
// the same round trip on the same connection. It returns the script's answer and
// whether an admission it made may be used as far as replicas go. While the master is
// thought to have no replica (l.sole), the round trip asks the master's INFO instead
// of WAITing: a master that has none and that every sentinel names holds admissions
// alone; one that has a replica again sends the next admission back to WAIT.
func (l *Limiter) run(ctx context.Context, keys []string, args []any) ([]int64, bool, error) {
	if l.replicas == 0 {
		res, err := l.script.Run(ctx, l.rdb, keys, args...).Int64Slice()
		return res, true, err
	}
	for loaded := false; ; loaded = true {
		alone := l.sole != nil && l.sole.check.Load()
		pipe := l.rdb.Pipeline()
		eval := pipe.EvalSha(ctx, l.script.Hash(), keys, args...)
		var wait *redis.Cmd
		var info []*redis.StringCmd
		if alone {
			info = []*redis.StringCmd{pipe.Info(ctx, "server"), pipe.Info(ctx, "replication"), pipe.Info(ctx, "stats")}
		} else {
			// WAIT's timeout 0 would block for ever.
			wait = pipe.Do(ctx, "WAIT", l.replicas, max(l.Margin/2, time.Millisecond).Milliseconds())
		}
		_, _ = pipe.Exec(ctx)
		if err := eval.Err(); redis.HasErrorPrefix(err, "NOSCRIPT") && !loaded {
			if err := l.script.Load(ctx, l.rdb).Err(); err != nil {
				return nil, false, err
			}
			continue
		}
		res, err := eval.Int64Slice()
		if err != nil {
			return nil, false, err
		}
		if alone {
			for _, c := range info {
				if err := c.Err(); err != nil {
					return nil, false, err
				}
			}
			m := parseMasterState(info[0].Val(), info[1].Val(), info[2].Val())
			if m.replicas != 0 {
				l.sole.check.Store(false)
				return res, false, nil
			}
			return res, res[0] != 1 || l.sole.holds(ctx, m), nil
		}
		n, err := wait.Int()
		if err != nil {
			return nil, false, err
		}
		if n < l.replicas && l.sole != nil {
			l.sole.check.Store(true)
		}
		return res, n >= l.replicas, nil
	}
}

// limiterKeys are an account's call log, a recipient's call log and the account's
// waiting flags. The account id in braces is a Redis Cluster hash tag: every key one
// script call touches is in the account's slot, so the script runs on one node.
func limiterKeys(accountID int64, recipient string) []string {
	base := "herald:lim:{" + strconv.FormatInt(accountID, 10) + "}"
	return []string{base + ":log", base + ":r:" + recipient, base + ":waiting"}
}

// clock is the limiter's time: Redis's, or the test's (LimiterConfig.Now).
func (l *Limiter) clock(ctx context.Context) (time.Time, error) {
	if l.now != nil {
		return l.now(), nil
	}
	return l.rdb.Time(ctx).Result()
}

// Usage reports an account's calls in each of its limited windows right now.
func (l *Limiter) Usage(ctx context.Context, accountID int64, limits delivery.Limits) ([]delivery.Usage, error) {
	return l.usage(ctx, []string{limiterKeys(accountID, "")[0]}, limits)
}

// usage is the calls of the logs keys name, counted together, in each of the account's
// limited windows; each log has the limits on its own, so the limit is theirs together.
func (l *Limiter) usage(ctx context.Context, keys []string, limits delivery.Limits) ([]delivery.Usage, error) {
	aw := accountWindows(limits)
	if len(aw) == 0 {
		return nil, nil
	}
	t, err := l.clock(ctx)
	if err != nil {
		return nil, fmt.Errorf("tasks: rate limiter usage: %w", err)
	}
	now := t.UnixMicro()
	pipe := l.rdb.Pipeline()
	cmds := make([][]*redis.IntCmd, len(aw))
	for i, w := range aw {
		for _, key := range keys {
			cmds[i] = append(cmds[i], pipe.ZCount(ctx, key, "("+strconv.FormatInt(now-(w.len+l.Margin).Microseconds(), 10), "+inf"))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("tasks: rate limiter usage: %w", err)
	}
	out := make([]delivery.Usage, len(aw))
	for i, w := range aw {
		out[i] = delivery.Usage{Window: w.name, Limit: w.limit * len(keys)}
		for _, c := range cmds[i] {
			out[i].Used += int(c.Val())
		}
	}
	return out, nil
}
