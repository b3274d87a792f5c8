package delivery

import (
	"fmt"
	"time"

	"herald/channels"
	"herald/i18n"
)

// Usage is one limited window's current use by an account.
type Usage struct {
	Window string `json:"window"`
	Used   int    `json:"used"`
	Limit  int    `json:"limit"`
}

// Limits are an account's send limits; 0 means no limit for that window. The store
// keeps them as columns of the account (sending.Account embeds them).
type Limits struct {
	PerSecond             int `json:"per_second"`
	PerMinute             int `json:"per_minute"`
	PerHour               int `json:"per_hour"`
	PerDay                int `json:"per_day"`
	PerRecipientPerSecond int `json:"per_recipient_per_second"`
	// PerRecipientPer30s and PerRecipientPer10m are Tencent Cloud's windows for one
	// number (SMS and voice calls).
	PerRecipientPer30s    int `json:"per_recipient_per_30s" gorm:"column:per_recipient_per_30s"`
	PerRecipientPerMinute int `json:"per_recipient_per_minute"`
	PerRecipientPer10m    int `json:"per_recipient_per_10m" gorm:"column:per_recipient_per_10m"`
	PerRecipientPerHour   int `json:"per_recipient_per_hour"`
	PerRecipientPerDay    int `json:"per_recipient_per_day"`
}

// LimitWindow is one of the limits an account may set: its name (the API's field and
// the catalogs' key), its window, whether it counts one person's messages or all, and
// where it is in Limits. LimitWindows is the one list of them: the form, the API, the
// limiter and the warnings all read it.
type LimitWindow struct {
	Name         string
	Len          time.Duration
	PerRecipient bool
	Of           func(*Limits) *int
}

// LimitWindows are the limits in the order the console shows them.
var LimitWindows = []LimitWindow{
	{"per_second", time.Second, false, func(l *Limits) *int { return &l.PerSecond }},
	{"per_minute", time.Minute, false, func(l *Limits) *int { return &l.PerMinute }},
	{"per_hour", time.Hour, false, func(l *Limits) *int { return &l.PerHour }},
	{"per_day", 24 * time.Hour, false, func(l *Limits) *int { return &l.PerDay }},
	{"per_recipient_per_second", time.Second, true, func(l *Limits) *int { return &l.PerRecipientPerSecond }},
	{"per_recipient_per_30s", 30 * time.Second, true, func(l *Limits) *int { return &l.PerRecipientPer30s }},
	{"per_recipient_per_minute", time.Minute, true, func(l *Limits) *int { return &l.PerRecipientPerMinute }},
	{"per_recipient_per_10m", 10 * time.Minute, true, func(l *Limits) *int { return &l.PerRecipientPer10m }},
	{"per_recipient_per_hour", time.Hour, true, func(l *Limits) *int { return &l.PerRecipientPerHour }},
	{"per_recipient_per_day", 24 * time.Hour, true, func(l *Limits) *int { return &l.PerRecipientPerDay }},
}

// Of is the value of the limit named window (per_minute, …); 0 for a name there is none of.
func (l Limits) Of(window string) int {
	for _, w := range LimitWindows {
		if w.Name == window {
			return *w.Of(&l)
		}
	}
	return 0
}

// DocumentedLimits are the limits a platform documents it enforces (channels'
// platform table), as Limits: what a new account of the platform starts from. cfg is
// the account's config, which names the provider of an sms or voice account (whose
// limits are the provider's); nil for other platforms.
func DocumentedLimits(platform string, cfg map[string]string) Limits {
	var l Limits
	documented := channels.DocumentedLimits(platform, cfg)
	for _, w := range LimitWindows {
		*w.Of(&l) = documented[w.Name]
	}
	return l
}

// LimitProblem is a limit that cannot be saved as given. Field names it as the API and
// the form do (limits.per_minute); Key and Args are its message in the catalogs. The
// store turns it into its field error.
type LimitProblem struct {
	Field string
	Key   string
	Args  []any
}

func (p *LimitProblem) Error() string { return fmt.Sprintf("%s: %s", p.Field, p.Key) }

// Validate checks each limit on its own: none may be negative.
func (l Limits) Validate() error {
	for _, w := range LimitWindows {
		if *w.Of(&l) < 0 {
			return &LimitProblem{Field: "limits." + w.Name, Key: "accounts.error.limit_negative"}
		}
	}
	return nil
}

// Excess is a limit set looser than the platform documents: above the documented
// value, or 0 (no limit) where the platform has one. The platform drops what goes
// beyond its limits, often without an error, so such a setting needs a confirmation.
type Excess struct {
	Platform   string
	Window     string
	Value      int // 0: no limit
	Documented int
}

// AboveDocumented lists the limits of l looser than platform (for an sms or voice
// account, the provider cfg names) documents, in LimitWindows' order.
func AboveDocumented(l Limits, platform string, cfg map[string]string) []Excess {
	documented := DocumentedLimits(platform, cfg)
	var out []Excess
	for _, w := range LimitWindows {
		v, d := *w.Of(&l), *w.Of(&documented)
		if d > 0 && (v == 0 || v > d) {
			out = append(out, Excess{Platform: platform, Window: w.Name, Value: v, Documented: d})
		}
	}
	return out
}

// In says it in lang, as the account's warnings do.
func (e Excess) In(lang string) string {
	key := "accounts.warning.above_documented"
	if e.Value == 0 {
		key = "accounts.warning.unlimited_documented"
	}
	return i18n.In(lang, key, "Label", i18n.In(lang, "accounts.limit."+e.Window), "Value", e.Value,
		"Documented", e.Documented, "Platform", i18n.In(lang, "platform."+e.Platform))
}

// String says it in English.
func (e Excess) String() string { return e.In(i18n.English) }
