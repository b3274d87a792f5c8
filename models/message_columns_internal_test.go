package models

import (
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gorm.io/gorm/schema"
)

// TestMessageColumnsCoverTheModel: the claim's read-back names every column GORM maps
// the Message model to, each read into its own field; a field added to the model and
// not to messageColumns would come back empty from every claim.
func TestMessageColumnsCoverTheModel(t *testing.T) {
	s, err := schema.Parse(&Message{}, &sync.Map{}, schema.NamingStrategy{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range s.Fields {
		if f.DBName != "" {
			want = append(want, f.DBName+" → "+f.Name)
		}
	}
	var m Message
	v := reflect.ValueOf(&m).Elem()
	var got []string
	for _, c := range messageColumns(&m) {
		field := "(no field)"
		for i := range v.NumField() {
			if v.Field(i).Addr().Interface() == c.into {
				field = v.Type().Field(i).Name
			}
		}
		got = append(got, c.name+" → "+field)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messageColumns against the model (-want +got):\n%s", diff)
	}
}

// TestMessageValuesFollowTheColumns: the intake's INSERT writes each value under its own
// column. Every field of a message gets a value of its own, and each of appendMessageValues
// must be the field messageColumns names at its place.
func TestMessageValuesFollowTheColumns(t *testing.T) {
	var m Message
	if left := FillFields(&m); len(left) > 0 {
		t.Fatalf("fields with no test value: %v", left)
	}
	cols, vals := messageColumns(&m), appendMessageValues(nil, &m)
	if len(cols) != len(vals) {
		t.Fatalf("%d columns, %d values", len(cols), len(vals))
	}
	for i, c := range cols {
		want := reflect.ValueOf(c.into).Elem()
		if want.Kind() == reflect.Pointer {
			want = want.Elem()
		}
		if want.Kind() == reflect.String {
			want = reflect.ValueOf(want.String()) // Priority and Status go as plain strings
		}
		if got := vals[i]; !reflect.DeepEqual(want.Interface(), got) {
			t.Errorf("value %d under column %s: %#v, want %#v", i, c.name, got, want.Interface())
		}
	}
	var nilPointers Message
	for i, val := range appendMessageValues(nil, &nilPointers) {
		if f := reflect.ValueOf(messageColumns(&nilPointers)[i].into).Elem(); f.Kind() == reflect.Pointer && val != nil {
			t.Errorf("column %s: a nil pointer goes as %#v, want nil", cols[i].name, val)
		}
	}
}
