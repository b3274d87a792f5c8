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
	// Lines says the value may hold several lines, one item a line (a pool of robots'
	// webhook URLs): the form gives it a box of several lines.
	Lines bool
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

// Change is one setting that differs between two configs.
type Change struct{ Key, Old, New string }

// DestinationChanges lists the destination keys of a platform whose value differs
// between two configs, an empty value read as its default.
func DestinationChanges(platform string, old, new map[string]string) []Change {
	var out []Change
	for _, f := range fieldsOf(platform) {
		if o, n := f.Value(old), f.Value(new); f.Destination && o != n {
			out = append(out, Change{Key: f.Key, Old: o, New: n})
		}
	}
	return out
}

// ConfigWarnings says what an account's config gives up, such as encryption.
func ConfigWarnings(platform string, cfg map[string]string) []Note {
	var out []Note
	for _, f := range fieldsOf(platform) {
		if w := f.Warnings[f.Value(cfg)]; w != "" {
			out = append(out, note(w))
		}
	}
	return out
}

// ValidateConfig checks an account's platform config as it is saved: no unknown keys,
// required ones present, URLs and hosts the account may reach (see CheckURL), numbers
// where numbers belong, and the platform's own rule across keys. A problem with one key
// is a *SettingError naming config.<key>.
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
	if p.check != nil {
		if err := p.check(cfg, allowPrivate); err != nil {
			return err
		}
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
