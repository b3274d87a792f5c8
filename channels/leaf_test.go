package channels

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// channels stays a leaf: adapters know no database, no simulator and no other part of
// Herald; only the message catalogs, which say their problems in the reader's language.
func TestChannelsIsALeaf(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "herald/") && path != "herald/i18n" {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
	if files == 0 {
		t.Fatal("no source files read")
	}
}

// Every platform of the table has what intake, fallback and the registry ask of it.
func TestEveryPlatformIsComplete(t *testing.T) {
	addresses := []string{"tianyuan_id", "zhaohu_id", "wecom_userid", "feishu_user_id", "dingtalk_userid", "email", "external_id", "mobile"}
	for _, name := range Platforms {
		p := platforms[name]
		if p.build == nil || p.cap.Max <= 0 || p.fields == nil {
			t.Errorf("%s: build, cap or fields missing", name)
		}
		if a := AddressField(name); !slices.Contains(addresses, a) {
			t.Errorf("%s: address field %q is not a staff member's field", name, a)
		}
	}
	if AddressField("pigeon") != "" || DocumentedLimits("pigeon", nil) != nil || TakesHTML("pigeon") {
		t.Error("an unknown platform has an address, limits or HTML")
	}
	if !TakesHTML("email") || TakesHTML("wecom") {
		t.Error("only email sends the HTML alternative")
	}
	wecom := DocumentedLimits("wecom", nil)
	if wecom["per_recipient_per_minute"] != 30 || wecom["per_recipient_per_hour"] != 1000 {
		t.Errorf("WeCom's documented limits = %v", wecom)
	}
	wecom["per_recipient_per_minute"] = 1
	if DocumentedLimits("wecom", nil)["per_recipient_per_minute"] != 30 {
		t.Error("a caller changed the table through DocumentedLimits")
	}
}
