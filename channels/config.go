package channels

import (
	"fmt"
	"net"
	"net/mail"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"herald/models"
)

// Field describes one config key of a platform.
type Field struct {
	Key      string
	Required bool
	// Secret keys are write-only: sealed at rest, masked on reads, never shown again.
	Secret bool
	// Destination keys say where the account connects, and so where its secrets go. A
	// stored secret is kept across an edit only while no destination key changes (see
	// DestinationChanges): a secret is never handed to an address it was not given for.
	Destination bool
	// Default is what an empty value means, when it means a value.
	Default string
	// Options are the only values allowed, when the set is fixed; each is shown by its
	// catalog key channels.option.<key>.<value>.
	Options []string
	// Warnings say, by option, what choosing it gives up (catalog keys).
	Warnings map[string]string
	// Label names the setting on the account form, Help explains it (catalog keys;
	// Help may be empty). Help is given the field's Default as .Default.
	Label, Help string
}

// Value is the key's value in cfg, its default when empty.
func (f Field) Value(cfg map[string]string) string {
	if v := strings.TrimSpace(cfg[f.Key]); v != "" {
		return v
	}
	return f.Default
}

// HelpNote is the field's explanation for the form, or a zero Note.
func (f Field) HelpNote() Note {
	if f.Help == "" {
		return Note{}
	}
	return note(f.Help, "Default", f.Default)
}

// LabelNote is the field's name on the form.
func (f Field) LabelNote() Note { return note(f.Label) }

// OptionNote is how the form shows one of the field's options.
func (f Field) OptionNote(option string) Note { return note("channels.option." + f.Key + "." + option) }

// Unit is what a platform counts when it caps the length of a message.
type Unit string

// The units of content caps.
const (
	// Bytes counts UTF-8 bytes: a Chinese character is 3, an ASCII letter 1.
	Bytes Unit = "bytes"
	// Characters counts Unicode code points: a Chinese character is 1, like a letter.
	Characters Unit = "characters"
)

// ContentCap is the longest message text a platform accepts, in the unit it counts.
type ContentCap struct {
	Max  int
	Unit Unit
}

// Len is the length of s as the platform counts it.
func (c ContentCap) Len(s string) int {
	if c.Unit == Characters {
		return utf8.RuneCountInString(s)
	}
	return len(s)
}

// Fits says whether s is within the cap.
func (c ContentCap) Fits(s string) bool { return c.Len(s) <= c.Max }

// MaxBytes is the most UTF-8 bytes a text within the cap can take.
func (c ContentCap) MaxBytes() int {
	if c.Unit == Characters {
		return c.Max * utf8.UTFMax
	}
	return c.Max
}

// ellipsis ends a text Truncate cut.
const ellipsis = "…"

// Truncate returns s if it fits, else s cut on a character boundary so that with an
// ellipsis added it fits: never inside a multi-byte character, so a Chinese message
// cut to a byte cap is still valid UTF-8 and shows no broken character.
func (c ContentCap) Truncate(s string) string {
	if c.Fits(s) {
		return s
	}
	room := c.Max - c.Len(ellipsis)
	if room <= 0 {
		return ""
	}
	if c.Unit == Characters {
		n := 0
		for i := range s {
			if n == room {
				return s[:i] + ellipsis
			}
			n++
		}
		return s + ellipsis
	}
	return cutBytes(s, room) + ellipsis
}

// cutBytes returns the longest prefix of s of at most n bytes that ends on a character
// boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// platform is one platform Herald sends through: its settings and its content cap.
type platform struct {
	// fields are its config keys, in the order forms show them (required keys first).
	fields []Field
	// cap bounds one message's text, counted as the platform counts it. Herald refuses
	// longer content at intake rather than letting a platform cut it, since a platform
	// that cuts at a byte count can cut a Chinese character in half.
	cap ContentCap
	// limits are what the platform documents it enforces, often by dropping the excess
	// without an error: a new account starts from them.
	limits models.Limits
}

// platforms is the one table of platform settings and content caps: validation,
// secrets, destinations, the account form and the content checks all read it.
var platforms = map[string]platform{
	// Tianyuan and Zhaohu (in-house IM, the generic JSON contract): the contract does not
	// say what its 4000 counts, so Herald counts UTF-8 bytes, the stricter reading: a
	// text of 4000 bytes is never more than 4000 characters either (about 1333 Chinese
	// characters).
	"tianyuan": {fields: genericFields, cap: ContentCap{Max: 4000, Unit: Bytes}},
	"zhaohu":   {fields: genericFields, cap: ContentCap{Max: 4000, Unit: Bytes}},
	// WeCom counts bytes: text and markdown content are "at most 2048 bytes, UTF-8", and
	// WeCom cuts longer content itself, at a byte, possibly inside a character. The
	// adapter puts the title into the content, so it fits the two together (see wecomBody).
	"wecom": {fields: []Field{
		{Key: "corp_id", Required: true, Destination: true, Label: "channels.field.corp_id", Help: "channels.help.corp_id"},
		{Key: "agent_id", Required: true, Label: "channels.field.agent_id", Help: "channels.help.agent_id"},
		{Key: "secret", Required: true, Secret: true, Label: "channels.field.wecom_secret"},
		{Key: "base_url", Destination: true, Default: DefaultWeComBaseURL, Label: "channels.field.base_url", Help: "channels.help.wecom_base_url"},
	}, cap: ContentCap{Max: 2048, Unit: Bytes},
		// Application messages: at most 30 a minute and 1,000 an hour to one member, the
		// excess dropped without an error. (The daily cap, 200 person-sends per member of
		// the account's licence, depends on the licence: the operator sets per_day.)
		limits: models.Limits{PerRecipientPerMinute: 30, PerRecipientPerHour: 1000}},
	// Email: SMTP sizes are bytes; Herald's own bound, far below what servers accept.
	"email": {fields: []Field{
		{Key: "host", Required: true, Destination: true, Label: "channels.field.host", Help: "channels.help.host"},
		{Key: "from", Required: true, Label: "channels.field.from", Help: "channels.help.from"},
		{Key: "port", Destination: true, Label: "channels.field.port", Help: "channels.help.port"},
		{Key: "username", Label: "channels.field.username", Help: "channels.help.username"},
		{Key: "password", Secret: true, Label: "channels.field.password"},
		{Key: "tls", Destination: true, Default: tlsStartTLS, Options: []string{tlsStartTLS, tlsImplicit, tlsNone},
			Warnings: map[string]string{tlsNone: "channels.warning.tls_none"}, Label: "channels.field.tls"},
		{Key: "pool_size", Default: strconv.Itoa(DefaultSMTPPoolSize), Label: "channels.field.pool_size", Help: "channels.help.pool_size"},
		{Key: "session_messages", Default: strconv.Itoa(DefaultSMTPSessionMessages), Label: "channels.field.session_messages", Help: "channels.help.session_messages"},
	}, cap: ContentCap{Max: 256 << 10, Unit: Bytes}},
	// Webhook: the receiver reads an HTTP body, bytes; Herald's own bound.
	"webhook": {fields: []Field{
		{Key: "url", Required: true, Destination: true, Label: "channels.field.url", Help: "channels.help.url"},
		{Key: "secret", Secret: true, Label: "channels.field.webhook_secret", Help: "channels.help.webhook_secret"},
	}, cap: ContentCap{Max: 64 << 10, Unit: Bytes}},
	// The sandbox simulates the generic contract, and counts as Tianyuan does.
	"sandbox": {fields: []Field{}, cap: ContentCap{Max: 4000, Unit: Bytes}},
}

// defaultCap bounds content for a platform the table does not know.
var defaultCap = ContentCap{Max: 4000, Unit: Bytes}

// genericFields are the settings of the generic JSON contract (Tianyuan and Zhaohu).
var genericFields = []Field{
	{Key: "base_url", Required: true, Destination: true, Label: "channels.field.base_url", Help: "channels.help.generic_base_url"},
	{Key: "token", Required: true, Secret: true, Label: "channels.field.token", Help: "channels.help.token"},
	{Key: "path", Destination: true, Default: defaultGenericPath, Label: "channels.field.path", Help: "channels.help.path"},
}

// Cap returns the content cap of a platform.
func Cap(platform string) ContentCap {
	if p, ok := platforms[platform]; ok {
		return p.cap
	}
	return defaultCap
}

// CountedContent is the text of a message that a platform's cap applies to: the
// content, and for WeCom, which has no title field, the title leading it as the
// adapter sends it. Intake checks this against Cap, so what the platform receives fits.
func CountedContent(platform string, m Message) string {
	if platform == "wecom" {
		return wecomText(m)
	}
	return m.Content
}

// LargestCapBytes is the most UTF-8 bytes any platform accepts in one message.
func LargestCapBytes() int {
	largest := 0
	for _, p := range platforms {
		largest = max(largest, p.cap.MaxBytes())
	}
	return largest
}

// Fields returns a platform's config keys in form order; nil for an unknown platform.
func Fields(platform string) []Field { return platforms[platform].fields }

// field returns the description of a platform's key.
func field(platform, key string) (Field, bool) {
	for _, f := range platforms[platform].fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// SecretKeys are the write-only config keys of each platform: stored encrypted, never
// shown again.
var SecretKeys = func() map[string][]string {
	out := map[string][]string{}
	for name, p := range platforms {
		for _, f := range p.fields {
			if f.Secret {
				out[name] = append(out[name], f.Key)
			}
		}
	}
	return out
}()

// Change is one setting that differs between two configs.
type Change struct{ Key, Old, New string }

// DestinationChanges lists the destination keys of a platform whose value differs
// between two configs, an empty value read as its default.
func DestinationChanges(platform string, old, new map[string]string) []Change {
	var out []Change
	for _, f := range platforms[platform].fields {
		if o, n := f.Value(old), f.Value(new); f.Destination && o != n {
			out = append(out, Change{Key: f.Key, Old: o, New: n})
		}
	}
	return out
}

// ConfigWarnings says what an account's config gives up, such as encryption.
func ConfigWarnings(platform string, cfg map[string]string) []Note {
	var out []Note
	for _, f := range platforms[platform].fields {
		if w := f.Warnings[f.Value(cfg)]; w != "" {
			out = append(out, note(w))
		}
	}
	return out
}

// ValidateConfig checks an account's platform config as it is saved: no unknown keys,
// required ones present, URLs and hosts the account may reach (see CheckURL), numbers
// where numbers belong. A problem with one key is a *models.FieldError naming
// config.<key>, its message a catalog key.
func ValidateConfig(platform string, cfg map[string]string, allowPrivate bool) error {
	p, ok := platforms[platform]
	if !ok {
		return fmt.Errorf("channels: unknown platform %q", platform)
	}
	names := make([]string, 0, len(cfg))
	for k := range cfg {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, known := field(platform, k); !known {
			return note("channels.config.unknown_key", "Platform", platform).invalid("config." + k)
		}
	}
	for _, f := range p.fields {
		if f.Required && strings.TrimSpace(cfg[f.Key]) == "" {
			return note("channels.config.required").invalid("config." + f.Key)
		}
	}
	for _, k := range names {
		v := cfg[k]
		if v == "" {
			continue // optional and empty: the default applies
		}
		if f, _ := field(platform, k); len(f.Options) > 0 && !slices.Contains(f.Options, v) {
			// Choices reads "a, b or c" in English; List is the plain list other
			// languages join in their own way.
			return note("channels.config.one_of", "Choices", oneOf(f.Options), "List", strings.Join(f.Options, " / ")).invalid("config." + k)
		}
		if problem := checkConfigValue(k, v, allowPrivate); !problem.IsZero() {
			return problem.invalid("config." + k)
		}
	}
	if platform == "email" && cfg["password"] != "" && strings.TrimSpace(cfg["username"]) == "" {
		return note("channels.config.username_for_password").invalid("config.username")
	}
	return nil
}

// oneOf lists choices as "a, b or c".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// checkConfigValue checks one non-empty value by its key, which means the same on
// every platform that has it; it returns a zero Note when the value is fine.
func checkConfigValue(key, v string, allowPrivate bool) Note {
	switch key {
	case "base_url", "url":
		return urlProblem(v, allowPrivate)
	case "path":
		if !strings.HasPrefix(v, "/") {
			return note("channels.config.path_slash")
		}
	case "agent_id":
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return note("channels.config.positive_number")
		}
	case "port":
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return note("channels.config.port")
		}
	case "pool_size":
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > MaxSMTPPoolSize {
			return note("channels.config.range", "Max", MaxSMTPPoolSize)
		}
	case "session_messages":
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > MaxSMTPSessionMessages {
			return note("channels.config.range", "Max", MaxSMTPSessionMessages)
		}
	case "host":
		h := strings.TrimSpace(v)
		if strings.ContainsAny(h, "/:@ ") && net.ParseIP(h) == nil {
			return note("channels.config.host")
		}
		return hostProblem(h, allowPrivate)
	case "from":
		if _, err := mail.ParseAddress(v); err != nil {
			return note("channels.config.from")
		}
	}
	return Note{}
}

// DefaultLimits are the limits a new account of the platform starts from: what the
// platform documents it enforces (none for the in-house platforms, email and webhooks,
// whose limits are the bank's own).
func DefaultLimits(platform string) models.Limits { return platforms[platform].limits }
