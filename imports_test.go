package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// listedPackage is the part of `go list -json` the import rules look at.
type listedPackage struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// listPackages runs `go list -json` on every package of the module.
func listPackages(t *testing.T) map[string]listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]listedPackage{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

// isHerald reports whether an import path is one of the module's own packages.
func isHerald(path string) bool { return path == "herald" || strings.HasPrefix(path, "herald/") }

// TestImportRules keeps the layout's dependencies pointing one way (README,
// "Architecture"): configuration is a leaf; platform adapters know nothing of the store
// or the simulator; pages and handlers know nothing of the queue; the kernel builds on
// nothing of Herald's but the catalogs and the migrations, and the audit log on nothing
// but the kernel; a domain on the kernel, the audit log, delivery, channels and the
// domains declared beneath it; only the kernel, the store and the domains' stores speak
// GORM; only the end-to-end tests and the benchmarks use the test harness. A rule broken
// here is a dependency to move behind an interface or a plain type where it is consumed,
// not an exception to add.
func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	pkgs := listPackages(t)
	get := func(path string) listedPackage {
		p, ok := pkgs[path]
		if !ok {
			t.Fatalf("go list does not list %s", path)
		}
		return p
	}

	// config imports nothing of Herald's, directly or through another package.
	for _, dep := range get("herald/config").Deps {
		if isHerald(dep) {
			t.Errorf("herald/config depends on %s: configuration must be a leaf", dep)
		}
	}

	// channels reaches neither the store nor the simulator.
	for _, dep := range get("herald/channels").Deps {
		if dep == "herald/models" || dep == "herald/simulator" || strings.HasPrefix(dep, "gorm.io/") {
			t.Errorf("herald/channels depends on %s", dep)
		}
	}

	// Pages and handlers talk to the queue only through dispatch and the small
	// interfaces handlers define; views reach it through nothing at all.
	queue := func(path string) bool {
		return path == "herald/tasks" || path == "github.com/hibiken/asynq" || strings.HasPrefix(path, "github.com/hibiken/asynq/")
	}
	for _, dep := range get("herald/views").Deps {
		if queue(dep) {
			t.Errorf("herald/views depends on %s", dep)
		}
	}
	for _, imp := range get("herald/handlers").Imports {
		if queue(imp) {
			t.Errorf("herald/handlers imports %s", imp)
		}
	}

	// The kernel, what every domain builds on (named errors, validation failures), is
	// built on nothing of Herald's but the catalogs and the migrations.
	for _, dep := range get("herald/kernel").Deps {
		if isHerald(dep) && dep != "herald/i18n" && dep != "herald/migrations" {
			t.Errorf("herald/kernel depends on %s: the kernel builds on the catalogs and the migrations alone", dep)
		}
	}

	// The audit log and the change runner build on the kernel alone: every domain's
	// service records its changes through them.
	for _, dep := range get("herald/audit").Deps {
		if isHerald(dep) && dep != "herald/kernel" && dep != "herald/i18n" && dep != "herald/migrations" {
			t.Errorf("herald/audit depends on %s: the audit log builds on the kernel alone", dep)
		}
	}

	// Each domain package owns its type, rules, queries and service. It builds on the
	// kernel, the audit log, the rules of delivery and the platforms' table, and on the
	// domains declared beneath it; never on the edges (handlers, views, web, the worker
	// runtime) nor on the layers still above the domains (the store and the service
	// layer that call into them).
	for domain, below := range domains {
		for _, imp := range get(domain).Imports {
			if !isHerald(imp) || foundation[imp] || slices.Contains(below, imp) {
				continue
			}
			t.Errorf("%s imports %s: a domain builds on the kernel, the audit log, delivery, channels and the domains declared beneath it", domain, imp)
		}
	}

	// Only the kernel, the store and the domains' query files (and their tests) import
	// GORM: a domain's service reaches the database through its store.
	for _, p := range pkgs {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if imp != "gorm.io/gorm" && !strings.HasPrefix(imp, "gorm.io/") {
				continue
			}
			if _, isDomain := domains[p.ImportPath]; !isDomain && p.ImportPath != "herald/models" && p.ImportPath != "herald/kernel" {
				t.Errorf("%s imports %s: only herald/kernel, herald/models and the domain packages speak GORM", p.ImportPath, imp)
			}
		}
	}
	for domain := range domains {
		for _, file := range gormFiles(t, get(domain)) {
			if strings.Contains(file, "service") {
				t.Errorf("%s/%s imports GORM: a domain's service reaches the database through its store", domain, file)
			}
		}
	}

	// The harness that starts Herald for the end-to-end tests and the benchmarks is
	// theirs alone: it may import anything, and nothing outside test/ and bench/ imports it.
	get("herald/test/harness")
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, "herald/test/") || p.ImportPath == "herald/bench" {
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if imp == "herald/test/harness" {
				t.Errorf("%s imports %s: only the end-to-end tests and the benchmarks use the harness", p.ImportPath, imp)
			}
		}
	}
}

// domains are the domain packages, each with the domains it may build on.
var domains = map[string][]string{
	"herald/access":    nil,
	"herald/directory": nil,
	"herald/sending":   nil,
	"herald/templates": {"herald/directory"},
	"herald/duty":      {"herald/directory"},
	// The silences hold messages, which are still the store's (models) until the
	// messages have a domain of their own.
	"herald/silence": {"herald/models", "herald/templates", "herald/duty"},
	"herald/recall":  {"herald/models", "herald/alert"},
	// The messages' service; their rows are still the store's (models).
	"herald/message": {"herald/models", "herald/access", "herald/alert", "herald/recall", "herald/sending"},
	"herald/alert":   {"herald/models", "herald/templates", "herald/directory", "herald/duty", "herald/sending", "herald/chatgroups"},
	// Integrations: the alerts monitoring tools post, normalised from their formats and
	// opened through the alerts' service.
	"herald/inbound": {"herald/models", "herald/alert", "herald/directory", "herald/duty", "herald/sending", "herald/templates", "herald/incident"},
	// Incidents: the alerts of one group key gathered, flapping keys quieted, notices
	// bounded; they act on the alerts through the alerts' service.
	"herald/incident": {"herald/models", "herald/alert"},
	// The calls of alerts: their outcomes act on the alerts through the alerts' service.
	"herald/phone": {"herald/models", "herald/alert"},
	// Inhibition: the rules by which an open alert mutes the alerts it causes, decided
	// as an integration's event opens one.
	"herald/inhibit": {"herald/models", "herald/alert", "herald/inbound"},
	// Chat groups: the group chats a send posts to, and whom a post @s by the duty rule.
	"herald/chatgroups": {"herald/directory", "herald/duty", "herald/sending"},
	// Reports: figures over the alerts (whose policies name rotations), the messages
	// (still the store's rows and its rule of what a key may see) and the duty rule.
	"herald/reports": {"herald/models", "herald/alert", "herald/directory", "herald/duty"},
}

// foundation is what every domain may build on.
var foundation = map[string]bool{
	"herald/kernel": true, "herald/audit": true, "herald/i18n": true, "herald/migrations": true,
	"herald/delivery": true, "herald/channels": true, "herald/internal/states": true,
	"herald/internal/batch": true, "herald/internal/linediff": true,
}

// gormFiles are the package's non-test files that import GORM.
func gormFiles(t *testing.T, p listedPackage) []string {
	t.Helper()
	var out []string
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "gorm.io/") {
				out = append(out, name)
				break
			}
		}
	}
	return out
}
