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
