// Package simulator is a fault-injecting stand-in for every platform Herald delivers to:
// the generic JSON contract (Tianyuan, Zhaohu), WeCom, Feishu, signed webhooks and SMTP.
//
// It records every delivery it accepts and, on request, fails in the ways real platforms
// do: server errors, silence, rate limiting, permanent rejection, bad credentials, and
// the ambiguous case of a delivery that was recorded but answered too late. One uniform
// random draw per request picks the outcome, so a seed makes a run reproducible. WeCom
// and Feishu also keep their documented per-person limits the way they do: a call past
// one is answered with success and delivers nothing, and the statistics count it
// (dropped_silently).
//
// Group robots (/wecom-bot/cgi-bin/webhook/send?key=…, /dingtalk-bot/robot/send?
// access_token=…, /feishu-bot/open-apis/bot/v2/hook/<token>) answer as the platforms
// do: a signature and its timestamp checked (within an hour, DingTalk and Feishu), a
// missing keyword refused, each robot's limits kept (WeCom 20 a minute, errcode 45009;
// DingTalk 20 a minute, then errcode 130101 for everything for ten minutes; Feishu 100 a
// minute and 5 a second, code 11232). POST /_sim/robots {"platform","token","secret",
// "keyword"} teaches it one robot's security settings; once a platform has one, posts
// to robots it was not taught are refused as to an unknown robot. Posts to group chats
// (robots, WeCom's appchat/send, Feishu's receive_id_type=chat_id) are recorded with
// their group and the people they @.
//
// The same Simulator serves HTTP (Handler), SMTP (ServeSMTP) and the in-process sandbox
// adapter (Accept), so all three share one record and one set of fault rates.
// RunCommand wraps it as the `herald simulate` command.
package simulator

import (
	"crypto/rand"
	"encoding/hex"
	"maps"
	mathrand "math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Delivery is one message the simulator accepted for one recipient.
type Delivery struct {
	Platform     string `json:"platform"`
	To           string `json:"to"`
	RequestID    string `json:"request_id"`
	Content      string `json:"content"`
	ReceivedAtMs int64  `json:"received_at_ms"` // unix milliseconds, when the request arrived
	// ProviderMsgID is the message id the platform answered with: a recall names it.
	ProviderMsgID string `json:"provider_msg_id,omitempty"`
	// Recalled is set once the platform took the message back.
	Recalled bool `json:"recalled,omitempty"`
	// Group is the group chat a group post went to: a robot's key or token, or an
	// application group chat's chat id; "" for a post to one person.
	Group string `json:"group,omitempty"`
	// Mentions are the people a group post @s, by the user id or mobile number it
	// named them with (only those the platform would show @-ed).
	Mentions []string `json:"mentions,omitempty"`
	// Card is the template card a WeCom message came as (Content then holds its title
	// and text); nil for plain messages.
	Card *Card `json:"card,omitempty"`
	// Provider is the SMS or voice provider played (aliyun, tencent, http); Template and
	// Params the provider template and its parameters in the order sent.
	Provider string  `json:"provider,omitempty"`
	Template string  `json:"template,omitempty"`
	Params   []Param `json:"params,omitempty"`
	// Outcome and Keys are what became of a call (answered, no_answer, busy) and the
	// keys its callee pressed.
	Outcome string `json:"outcome,omitempty"`
	Keys    string `json:"keys,omitempty"`
}

// Param is one parameter of a provider template.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Card is a WeCom template card with buttons, as the simulator received it.
type Card struct {
	CardType string       `json:"card_type"`
	TaskID   string       `json:"task_id"`
	Buttons  []CardButton `json:"buttons"`
}

// CardButton is one button of a card: its words and the key a click reports.
type CardButton struct {
	Text string `json:"text"`
	Key  string `json:"key"`
}

// Stats counts what the simulator has seen since it started or was last reset.
type Stats struct {
	// Requests counts well-formed send requests: HTTP message calls, SMTP mail
	// transactions (and AUTH commands refused by AuthFail), and Accept calls. Malformed
	// ones are answered but not counted, so Requests equals the successful requests plus
	// the sum of Faults. WeCom token requests are not counted.
	Requests int64 `json:"requests"`
	// Accepted counts recorded deliveries, one per recipient, including those recorded
	// by accept-then-timeout faults.
	Accepted int64 `json:"accepted"`
	// ByPlatform splits Accepted by platform.
	ByPlatform map[string]int64 `json:"by_platform"`
	// Faults counts injected faults by kind.
	Faults FaultCounts `json:"faults"`
	// DroppedSilently counts calls a platform answers with success but delivers nothing
	// for, as WeCom, Feishu and DingTalk do past their documented limits, by platform.
	DroppedSilently map[string]int64 `json:"dropped_silently"`
}

// silentPlatforms are the platforms that drop the excess without an error; the stats
// name each of them, 0 when nothing was dropped.
var silentPlatforms = []string{"wecom", "feishu", "dingtalk"}

func newStats() Stats {
	st := Stats{ByPlatform: map[string]int64{}, DroppedSilently: map[string]int64{}}
	for _, p := range silentPlatforms {
		st.DroppedSilently[p] = 0
	}
	return st
}

// FaultCounts counts injected faults by kind.
type FaultCounts struct {
	Fail              int64 `json:"fail"`
	Timeout           int64 `json:"timeout"`
	Throttle          int64 `json:"throttle"`
	Reject            int64 `json:"reject"`
	AcceptThenTimeout int64 `json:"accept_then_timeout"`
	Auth              int64 `json:"auth"`
}

// Options are the settings fixed for a simulator's lifetime. The zero value is usable.
type Options struct {
	// Seed makes the fault draws reproducible; 0 picks a random seed.
	Seed int64
	// WebhookSecret, when set, makes the webhook endpoint verify X-Herald-Signature.
	WebhookSecret string
	// WeComTokenTTL is how long a WeCom access token lives; 0 means 7200 s, as on WeCom.
	WeComTokenTTL time.Duration
	// FeishuTokenTTL is how long a Feishu tenant_access_token lives; 0 means 7200 s, as
	// on Feishu.
	FeishuTokenTTL time.Duration
	// NoPlatformLimits turns off the platforms' documented limits (WeCom's and Feishu's
	// per-person silent drops, Feishu's application 429s, DingTalk's per-employee,
	// same-content and per-minute silent drops, the group robots' limits), so a
	// benchmark can measure
	// a drain far faster than any platform allows.
	NoPlatformLimits bool
	// DingTalkTokenTTL is how long a DingTalk access token lives; 0 means 7200 s, as on
	// DingTalk.
	DingTalkTokenTTL time.Duration
	// Now is the clock for recording times, token expiry and DingTalk's days and
	// minutes; nil means time.Now.
	Now func() time.Time
}

// defaultWeComTokenTTL is WeCom's own access-token lifetime.
const defaultWeComTokenTTL = 7200 * time.Second

// Simulator records deliveries and injects faults. It is safe for concurrent use.
type Simulator struct {
	opts    Options
	handler http.Handler
	tokens  *tokenStore
	// wecomMembers keeps WeCom's per-member limits; feishu is the simulated Feishu.
	wecomMembers *windowCounter
	feishu       *feishuState
	// dingtalk holds DingTalk's counters and tasks.
	dingtalk *dingtalkState
	// robots holds the group robots' settings, windows and holds.
	robots *robotState
	// phone plays the SMS and voice providers.
	phone *phoneState
	// idPrefix keeps message ids unique across simulator restarts; idSeq within one.
	idPrefix string
	idSeq    atomic.Uint64
	// released ends every held timeout at once when the command shuts down.
	released    chan struct{}
	releaseOnce sync.Once

	mu         sync.Mutex // guards everything below
	faults     Faults
	rng        *mathrand.Rand
	deliveries []Delivery
	stats      Stats
	// wecomCallback is where clicks on WeCom cards are reported (nil: nowhere yet).
	wecomCallback *wecomCallback
	// wecomUnknown and wecomUnlicensed are WeCom's directory (see WeComDirectory).
	wecomUnknown, wecomUnlicensed map[string]bool
}

// New returns a simulator with the given faults and default options.
func New(f Faults) *Simulator {
	return NewWithOptions(f, Options{})
}

// NewWithOptions returns a simulator with the given faults and options.
func NewWithOptions(f Faults, opts Options) *Simulator {
	if opts.WeComTokenTTL <= 0 {
		opts.WeComTokenTTL = defaultWeComTokenTTL
	}
	if opts.FeishuTokenTTL <= 0 {
		opts.FeishuTokenTTL = defaultFeishuTokenTTL
	}
	if opts.DingTalkTokenTTL <= 0 {
		opts.DingTalkTokenTTL = defaultWeComTokenTTL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	seed := uint64(opts.Seed)
	if seed == 0 {
		seed = mathrand.Uint64()
	}
	var prefix [4]byte
	rand.Read(prefix[:])
	s := &Simulator{
		opts:         opts,
		tokens:       newTokenStore(),
		wecomMembers: newWindowCounter(wecomMemberLimits...),
		feishu:       newFeishuState(!opts.NoPlatformLimits),
		idPrefix:     "sim-" + hex.EncodeToString(prefix[:]) + "-",
		released:     make(chan struct{}),
		faults:       f,
		dingtalk:     newDingTalkState(!opts.NoPlatformLimits),
		// A fixed second word is fine: the seed alone must decide the sequence.
		rng:   mathrand.New(mathrand.NewPCG(seed, 0x6865726c64)),
		stats: newStats(),
	}
	if opts.NoPlatformLimits {
		s.wecomMembers = newWindowCounter()
	}
	s.robots = newRobotState(s, !opts.NoPlatformLimits)
	s.phone = newPhoneState(s, !opts.NoPlatformLimits)
	s.handler = s.routes()
	return s
}

// SetFaults replaces the fault settings. It does not validate them; see Faults.Validate.
func (s *Simulator) SetFaults(f Faults) {
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
}

// Faults returns the current fault settings.
func (s *Simulator) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// updateFaults applies change to the current settings and keeps the result only if it
// is valid, atomically, so two concurrent partial updates cannot lose each other.
func (s *Simulator) updateFaults(change func(*Faults)) (Faults, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.faults
	change(&next)
	if err := next.Validate(); err != nil {
		return s.faults, err
	}
	s.faults = next
	return next, nil
}

// Deliveries returns a copy of the recorded deliveries, oldest first.
func (s *Simulator) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, len(s.deliveries))
	copy(out, s.deliveries)
	return out
}

// Stats returns a copy of the counters.
func (s *Simulator) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.ByPlatform = maps.Clone(s.stats.ByPlatform)
	out.DroppedSilently = maps.Clone(s.stats.DroppedSilently)
	return out
}

// Reset clears the recorded deliveries, the counters and the platforms' windows;
// fault settings, tokens, robots' settings and WeCom's directory stay.
func (s *Simulator) Reset() {
	s.wecomMembers.reset()
	s.feishu.reset()
	s.robots.reset()
	for _, c := range s.phone.limits {
		c.reset()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliveries = nil
	s.stats = newStats()
}

// record stores accepted deliveries.
func (s *Simulator) record(ds ...Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deliveries = append(s.deliveries, ds...)
	s.stats.Accepted += int64(len(ds))
	for _, d := range ds {
		s.stats.ByPlatform[d.Platform]++
	}
}

// markRecalled marks the deliveries of platform that were answered with the provider
// message id as recalled (a message to several people has one id), and reports whether
// there were any. Each platform's recall endpoint calls it once it accepts the recall.
func (s *Simulator) markRecalled(platform, providerMsgID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for i := range s.deliveries {
		d := &s.deliveries[i]
		if d.Platform == platform && providerMsgID != "" && d.ProviderMsgID == providerMsgID {
			d.Recalled, found = true, true
		}
	}
	return found
}

// recallable finds the delivery of platform answered with the provider message id: it
// tells whether there is one, whether it is recalled already, and when it arrived.
func (s *Simulator) recallable(platform, providerMsgID string) (found, recalled bool, receivedAtMs int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.deliveries {
		if d.Platform == platform && providerMsgID != "" && d.ProviderMsgID == providerMsgID {
			return true, d.Recalled, d.ReceivedAtMs
		}
	}
	return false, false, 0
}

// dropSilently counts n deliveries the platform answered with success and dropped.
func (s *Simulator) dropSilently(platform string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.DroppedSilently[platform] += int64(n)
}

// newMsgID returns a provider message id unique to this simulator.
func (s *Simulator) newMsgID() string {
	return s.idPrefix + strconv.FormatUint(s.idSeq.Add(1), 10)
}

// now reads the simulator's clock.
func (s *Simulator) now() time.Time { return s.opts.Now() }

// releaseHolds ends every held timeout fault, present and future; used at shutdown so
// silent requests do not hold the process open.
func (s *Simulator) releaseHolds() {
	s.releaseOnce.Do(func() { close(s.released) })
}
