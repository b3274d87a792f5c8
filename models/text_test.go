package models_test

import (
	"errors"
	"testing"

	"herald/directory"
	"herald/kernel"
)

func TestCheckTextRefusesControlCharacters(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		multiline bool
		ok        bool
	}{
		{"plain", "Ledger 42 is overdue", false, true},
		{"Chinese", "张伟：请今天处理", false, true},
		{"tab", "a\tb", false, true},
		{"NUL", "a\x00b", true, false},
		{"escape", "a\x1b[31mb", true, false},
		{"bell", "\x07", false, false},
		{"newline in one line", "a\nb", false, false},
		{"newline and CRLF in text", "a\nb\r\nc", true, true},
	}
	for _, tt := range tests {
		err := kernel.CheckText("content.text", tt.text, tt.multiline)
		var fe *kernel.FieldError
		switch {
		case tt.ok && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case !tt.ok && (!errors.As(err, &fe) || fe.Field != "content.text"):
			t.Errorf("%s: got %v, want a field error on content.text", tt.name, err)
		}
	}
}

func TestValidateRecipientRefusesControlCharacters(t *testing.T) {
	for field, r := range map[string]directory.Recipient{
		"name":       {ExternalID: "E1", Name: "Zhang\x00Wei", OrgType: directory.Branch},
		"department": {ExternalID: "E1", Name: "Zhang Wei", OrgType: directory.Branch, Department: "Ops\x1b"},
		"branch":     {ExternalID: "E1", Name: "Zhang Wei", OrgType: directory.Branch, Branch: "Pudong\n"},
	} {
		err := directory.ValidateRecipient(&r)
		var fe *kernel.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s with a control character: got %v, want a field error on %s", field, err, field)
		}
	}
}
