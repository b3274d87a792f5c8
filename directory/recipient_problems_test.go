package directory_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/directory"
	"herald/i18n"
	"herald/templates"
)

// problems lists a recipient's problems as "field: message", in English.
func problems(r directory.Recipient) []string {
	var out []string
	for _, fe := range directory.RecipientProblems(&r) {
		out = append(out, fe.Field+": "+fe.Text(i18n.English))
	}
	return out
}

func TestRecipientProblemsListsEveryField(t *testing.T) {
	got := problems(directory.Recipient{ExternalID: strings.Repeat("x", 65), Name: strings.Repeat("名", 160), OrgType: "hq",
		Branch: "Pudong\x00", Department: strings.Repeat("d", 101), TianyuanID: "ty 1", ZhaohuID: strings.Repeat("z", 129),
		Email: "nobody@"})
	want := []string{
		"external_id: has 65 characters; at most 64",
		"name: has 160 characters; at most 100",
		"org_type: must be head_office or branch",
		"branch: contains the control character U+0000 at character 7; remove it",
		"department: has 101 characters; at most 100",
		"tianyuan_id: must not contain spaces",
		"zhaohu_id: has 129 characters; at most 128",
		"email: is not an email address",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	ok := directory.Recipient{ExternalID: " E1 ", Name: strings.Repeat("名", 100), OrgType: directory.Branch}
	if p := directory.RecipientProblems(&ok); len(p) != 0 {
		t.Errorf("a valid recipient has problems: %v", p)
	}
	if ok.ExternalID != "E1" {
		t.Errorf("external id %q, want it trimmed", ok.ExternalID)
	}
	if err := directory.ValidateRecipient(&ok); err != nil {
		t.Errorf("ValidateRecipient of a valid recipient: %v", err)
	}
	bad := directory.Recipient{ExternalID: "E1", OrgType: directory.Branch}
	if err := directory.ValidateRecipient(&bad); err == nil || !strings.HasPrefix(err.Error(), "name: ") {
		t.Errorf("ValidateRecipient without a name: %v", err)
	}
}

func TestTemplateDisplayNameCheck(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"  交班提醒 ", "交班提醒", ""},
		{"", "", ""},
		{strings.Repeat("长", 100), strings.Repeat("长", 100), ""},
		{strings.Repeat("长", 101), "", "display_name: has 101 characters; at most 100"},
		{"交班\n提醒", "", "display_name: contains the control character U+000A"},
	} {
		tm := templates.Template{Name: "shift", DisplayName: tt.in}
		err := tm.CheckDisplayName()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.err == "" && tm.DisplayName != tt.want:
			t.Errorf("%q became %q, want %q", tt.in, tm.DisplayName, tt.want)
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want %q…", tt.in, err, tt.err)
		}
	}
	if l := (&templates.Template{Name: "shift"}).Label(); l != "shift" {
		t.Errorf("label without a display name %q, want the name", l)
	}
	if l := (&templates.Template{Name: "shift", DisplayName: "交班"}).Label(); l != "交班" {
		t.Errorf("label %q, want the display name", l)
	}
}
