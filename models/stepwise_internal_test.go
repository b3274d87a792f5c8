package models

import (
	"herald/audit"
	"reflect"
	"testing"
)

// TestStepwiseExtras: every extra of a batch but its audit entry keeps the intake out of
// a script. Each field of BatchExtras is set in turn, so an extra added later and not
// named in stepwise fails here rather than being left out of the script unseen.
func TestStepwiseExtras(t *testing.T) {
	if (&BatchExtras{Audit: &audit.Entry{}}).stepwise() || (*BatchExtras)(nil).stepwise() {
		t.Error("an audit entry alone, or no extras: stepwise, want a script")
	}
	typ := reflect.TypeFor[BatchExtras]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if name == "Audit" {
			continue
		}
		var x BatchExtras
		f := reflect.ValueOf(&x).Elem().Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("BatchExtras.%s: no test value for kind %s", name, f.Kind())
		}
		if !x.stepwise() {
			t.Errorf("BatchExtras with %s set: not stepwise, so it would go in a script unchecked", name)
		}
	}
}
