package templates

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"herald/kernel"
)

// Template is a named message body in Go template syntax with declared variables.
// Name is the Latin name the API calls it by; DisplayName, in any language, is what the
// console shows (Label).
type Template struct {
	ID          int64
	Name        string
	DisplayName string
	MsgType     string
	Subject     string
	Body        string
	// HTML is an HTML alternative of Body, sent by email beside the text ("" for none).
	HTML      string
	Variables StringList
	// Fallback is the platforms a message of the template falls back to, in order,
	// comma-separated, when a request names none ("" for none).
	Fallback string
	// Digest is the digest a send of the template uses when it names none, as JSON
	// (dispatch.DigestRequest; "" for none).
	Digest string
	// ProviderTemplate is the provider's approved template an SMS or a call is sent as
	// (its code: SMS_…, TTS_…, a Tencent template id), and ProviderParams map the
	// provider template's parameters, in order, each "name=expression" where the
	// expression is Herald template syntax on the variables (host={{.host}}).
	ProviderTemplate string
	ProviderParams   StringList
	// Version is the number of the template's latest version (TemplateVersion); the
	// store raises it as it saves one, never from this field (read-only here).
	Version   int `gorm:"->"`
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxDisplayName is how many characters a template's display name may have.
const MaxDisplayName = 100

// Label is what the console calls a template: its display name, or its name when it
// has none.
func (t *Template) Label() string {
	if t.DisplayName != "" {
		return t.DisplayName
	}
	return t.Name
}

// CheckDisplayName trims a template's display name and checks it: at most
// MaxDisplayName characters on one line. The console and the API share it.
func (t *Template) CheckDisplayName() error {
	t.DisplayName = strings.TrimSpace(t.DisplayName)
	if err := kernel.TooLong("display_name", "templates.invalid.too_long", t.DisplayName, MaxDisplayName); err != nil {
		return err
	}
	return kernel.CheckText("display_name", t.DisplayName, false)
}

// OptionalMark ends a declared variable that may be left blank: a template declaring
// ["task", "note?"] needs a value for task and takes note blank or not given at all (its
// body still writes {{.note}}). Without the mark a variable must have a value that is not
// only spaces, so templates saved before the mark existed keep their meaning.
const OptionalMark = "?"

// TemplateVariable is one declared variable of a template.
type TemplateVariable struct {
	Name     string
	Optional bool
}

// ParseVariable reads a declared variable: its name and whether OptionalMark ends it.
func ParseVariable(declared string) TemplateVariable {
	name, optional := strings.CutSuffix(declared, OptionalMark)
	return TemplateVariable{Name: name, Optional: optional}
}

// Vars are the template's declared variables, in their order.
func (t *Template) Vars() []TemplateVariable {
	out := make([]TemplateVariable, len(t.Variables))
	for i, v := range t.Variables {
		out[i] = ParseVariable(v)
	}
	return out
}

// VariableNames are the names of the template's variables, without OptionalMark.
func (t *Template) VariableNames() []string {
	out := make([]string, len(t.Variables))
	for i, v := range t.Variables {
		out[i] = ParseVariable(v).Name
	}
	return out
}

// StringList is a list of strings stored as a JSON array in one column.
type StringList []string

// Value implements driver.Valuer.
func (l StringList) Value() (driver.Value, error) {
	if l == nil {
		l = StringList{}
	}
	b, err := json.Marshal([]string(l))
	return string(b), err
}

// Scan implements sql.Scanner.
func (l *StringList) Scan(src any) error { return kernel.ScanJSON(src, l) }

// CreateTemplate stores a new template.
func (s *Library) CreateTemplate(ctx context.Context, t *Template) error {
	if err := s.k.Writer(ctx).Create(t).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "validation.name_taken_template")
		}
		return fmt.Errorf("templates: create template %s: %w", t.Name, err)
	}
	return nil
}

// TemplateByName returns one template.
func (s *Library) TemplateByName(ctx context.Context, name string) (*Template, error) {
	var t Template
	if err := s.k.Reader(ctx).Where("name = ?", name).First(&t).Error; err != nil {
		return nil, fmt.Errorf("templates: template %s: %w", name, kernel.NotFound(err))
	}
	return &t, nil
}

// Templates lists every template by name.
func (s *Library) Templates(ctx context.Context) ([]Template, error) {
	var out []Template
	if err := s.k.Reader(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("templates: list templates: %w", err)
	}
	return out, nil
}

// UpdateTemplate saves a changed template, found by its current name.
func (s *Library) UpdateTemplate(ctx context.Context, name string, t *Template) error {
	old, err := s.TemplateByName(ctx, name)
	if err != nil {
		return err
	}
	t.ID, t.CreatedAt = old.ID, old.CreatedAt
	if err := s.k.Writer(ctx).Save(t).Error; err != nil {
		if kernel.IsDuplicate(err) {
			return kernel.DuplicateField("name", "validation.name_taken_template")
		}
		return fmt.Errorf("templates: update template %s: %w", name, err)
	}
	return nil
}

// DeleteTemplate removes a template. Messages already rendered from it are unaffected.
func (s *Library) DeleteTemplate(ctx context.Context, name string) error {
	res := s.k.Writer(ctx).Where("name = ?", name).Delete(&Template{})
	if res.Error != nil {
		return fmt.Errorf("templates: delete template %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("templates: template %s: %w", name, kernel.ErrNotFound)
	}
	return nil
}

// TemplateByID returns a template by id.
func (s *Library) TemplateByID(ctx context.Context, id int64) (*Template, error) {
	var t Template
	if err := s.k.Reader(ctx).First(&t, id).Error; err != nil {
		return nil, fmt.Errorf("templates: template %d: %w", id, kernel.NotFound(err))
	}
	return &t, nil
}
