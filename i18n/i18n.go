// Package i18n translates what the console shows: message catalogs in TOML, one pair of
// files per area of the console (locales/<area>.<language>.toml), embedded in the
// binary and read with go-i18n; languages matched with golang.org/x/text/language.
//
// Every string a person reads is looked up by a key (T, N), so a page renders in the
// language its request was given (WithLang). What Herald stores and what the JSON API
// names (status values, error classes, reasons, routes) stays as it is: only its display
// goes through the catalogs.
package i18n

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	goi18n "github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

// The console's languages. English is the catalogs' reference: every key exists in it.
const (
	Chinese = "zh-CN"
	English = "en"
)

// Languages are the console's languages, in the order the language switch shows them.
// Adding one: a catalog file locales/<area>.<tag>.toml for every area, the tag here, and
// its own name in LanguageName; the catalog test then lists every key still missing.
var Languages = []string{Chinese, English}

// LanguageName is how each language names itself in the switch.
var LanguageName = map[string]string{Chinese: "中文", English: "English"}

//go:embed locales/*.toml
var files embed.FS

var (
	bundle  *goi18n.Bundle
	matcher = newMatcher()
	// localizers are built once per language: they are safe for concurrent use.
	localizers = map[string]*goi18n.Localizer{}
	// keys is every message id of each language, for the catalog test.
	keys = map[string][]string{}
)

// newMatcher matches browsers' languages to Languages, in their order.
func newMatcher() language.Matcher {
	tags := make([]language.Tag, len(Languages))
	for i, l := range Languages {
		tags[i] = language.MustParse(l)
	}
	return language.NewMatcher(tags)
}

func init() {
	var err error
	if bundle, err = load(files); err != nil {
		panic(err)
	}
	for _, lang := range Languages {
		localizers[lang] = goi18n.NewLocalizer(bundle, lang)
	}
}

// load reads every catalog file of fsys.
func load(fsys fs.FS) (*goi18n.Bundle, error) {
	b := goi18n.NewBundle(language.English)
	b.RegisterUnmarshalFunc("toml", toml.Unmarshal)
	paths, err := fs.Glob(fsys, "locales/*.toml")
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		buf, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		mf, err := b.ParseMessageFileBytes(buf, p)
		if err != nil {
			return nil, fmt.Errorf("i18n: %s: %w", p, err)
		}
		lang := mf.Tag.String()
		if !slices.Contains(Languages, lang) {
			return nil, fmt.Errorf("i18n: %s: language %s is not one of %v", p, lang, Languages)
		}
		for _, m := range mf.Messages {
			keys[lang] = append(keys[lang], m.ID)
		}
	}
	for lang := range keys {
		sort.Strings(keys[lang])
	}
	return b, nil
}

// Keys returns every message id of a language's catalogs, sorted.
func Keys(lang string) []string { return keys[lang] }

// Match picks the console language for the first of the candidates that names one:
// a user's setting ("zh-CN", "en"), or an Accept-Language header. Empty candidates
// are skipped; with none usable it returns "".
func Match(candidates ...string) string {
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if slices.Contains(Languages, c) {
			return c
		}
		tags, _, err := language.ParseAcceptLanguage(c)
		if err != nil || len(tags) == 0 {
			continue
		}
		_, i, conf := matcher.Match(tags...)
		if conf == language.No {
			continue
		}
		return Languages[i]
	}
	return ""
}

// Valid reports whether lang is one of Languages.
func Valid(lang string) bool { return slices.Contains(Languages, lang) }

type langKey struct{}

// WithLang returns a context whose pages and messages render in lang.
func WithLang(ctx context.Context, lang string) context.Context {
	return context.WithValue(ctx, langKey{}, lang)
}

// Lang is the language of ctx: English unless WithLang set one.
func Lang(ctx context.Context) string {
	if l, ok := ctx.Value(langKey{}).(string); ok && Valid(l) {
		return l
	}
	return English
}

// T translates a message into the language of ctx. args are the template's data as
// name, value pairs: T(ctx, "recipients.imported", "Created", 3).
func T(ctx context.Context, id string, args ...any) string {
	return In(Lang(ctx), id, args...)
}

// N translates a message with plural forms for count, also given to the template as
// .Count.
func N(ctx context.Context, id string, count int, args ...any) string {
	return localize(Lang(ctx), id, &count, args)
}

// In translates a message into lang.
func In(lang, id string, args ...any) string { return localize(lang, id, nil, args) }

func localize(lang, id string, count *int, args []any) string {
	l, ok := localizers[lang]
	if !ok {
		l = localizers[English]
	}
	data := make(map[string]any, len(args)/2+1)
	for i := 0; i+1 < len(args); i += 2 {
		data[fmt.Sprint(args[i])] = args[i+1]
	}
	cfg := &goi18n.LocalizeConfig{MessageID: id, TemplateData: data}
	if count != nil {
		cfg.PluralCount = *count
		data["Count"] = *count
	}
	s, err := l.Localize(cfg)
	if err != nil {
		noteMissing(lang, id, err)
		if s == "" {
			return id
		}
	}
	return s
}

var (
	missingMu sync.Mutex
	missing   = map[string]string{}
	// missLog is every failed lookup in order, the latest missLogCap of them, and
	// missBase the mark of its first: tests side by side each read the failures since a
	// mark of their own (MissingSince) instead of clearing one another's record.
	missLog  []string
	missBase int
)

// missLogCap bounds missLog: past it the older half is forgotten.
const missLogCap = 4096

// noteMissing remembers a key a catalog lacks (or a template that failed), for Missing.
func noteMissing(lang, id string, err error) { remember(lang+" "+id, err.Error()) }

// NoteUntranslated remembers English text shown to a user of another language because
// it has no catalog key, for Missing.
func NoteUntranslated(text string) { remember("untranslated "+text, "no catalog key") }

func remember(what, why string) {
	missingMu.Lock()
	defer missingMu.Unlock()
	missing[what] = why
	missLog = append(missLog, what+": "+why)
	if len(missLog) > missLogCap {
		drop := len(missLog) - missLogCap/2
		missLog = append([]string(nil), missLog[drop:]...)
		missBase += drop
	}
}

// MissingMark marks the present, for MissingSince.
func MissingMark() int {
	missingMu.Lock()
	defer missingMu.Unlock()
	return missBase + len(missLog)
}

// MissingSince returns, sorted and each once, the lookups that failed since mark (as
// Missing words them), whoever looked them up.
func MissingSince(mark int) []string {
	missingMu.Lock()
	defer missingMu.Unlock()
	seen := map[string]bool{}
	out := []string{}
	for _, m := range missLog[min(max(mark-missBase, 0), len(missLog)):] {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// Missing returns, sorted, the lookups that failed since the process started (or since
// ResetMissing): "<language> <key>: <why>". The tests that walk the console fail on any.
func Missing() []string {
	missingMu.Lock()
	defer missingMu.Unlock()
	out := make([]string, 0, len(missing))
	for k, why := range missing {
		out = append(out, k+": "+why)
	}
	sort.Strings(out)
	return out
}

// ResetMissing forgets the failed lookups Missing returns (not those MissingSince
// does).
func ResetMissing() {
	missingMu.Lock()
	defer missingMu.Unlock()
	clear(missing)
}

// Msg is a message to translate later, where the language is known: a validation error
// made deep in the store is shown in the language of the page or API call that caused it.
type Msg struct {
	ID   string
	Args []any
}

// M makes a Msg.
func M(id string, args ...any) Msg { return Msg{ID: id, Args: args} }

// In translates the message into lang.
func (m Msg) In(lang string) string { return In(lang, m.ID, m.Args...) }

// String is the message in English, for logs and errors.
func (m Msg) String() string { return m.In(English) }

// Name returns the translation of a stored value shown to people: a status, an error
// class, a reason. Values without a key of their own show as they are, with underscores
// as spaces, so that an unforeseen value is still readable.
func Name(ctx context.Context, group, value string) string {
	if value == "" {
		return ""
	}
	id := group + "." + value
	lang := Lang(ctx)
	if !has(lang, id) {
		return strings.ReplaceAll(value, "_", " ")
	}
	return In(lang, id)
}

// has reports whether lang's catalogs define id.
func has(lang, id string) bool {
	ks := keys[lang]
	i := sort.SearchStrings(ks, id)
	return i < len(ks) && ks[i] == id
}

// Has reports whether lang's catalogs hold the message id.
func Has(lang, id string) bool {
	_, ok := slices.BinarySearch(keys[lang], id)
	return ok
}
