package i18n_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"herald/i18n"
)

// auditWriters are the functions and methods that take an audit action code, and the
// position of the code among their arguments. A call to one of them whose code is not
// a string literal fails TestEveryAuditActionHasASentence: a code built at run time
// could escape the catalogs.
var auditWriters = map[string]int{
	"Audit":        0, // audit.Change.Audit
	"AuditDetail":  0, // audit.Change.AuditDetail
	"Entry":        0, // audit.Actor.Entry
	"audit":        2, // handlers.Handlers.audit
	"auditOnce":    2, // handlers.Handlers.auditOnce
	"auditAPI":     1, // handlers.Handlers.auditAPI
	"AuditRequest": 1, // handlers.Handlers.AuditRequest
}

// monitoringMethods are the actions web/monitoring.go writes as "monitoring." and the
// method of a request to Asynqmon that is not a GET.
var monitoringMethods = []string{"monitoring.post", "monitoring.put", "monitoring.patch", "monitoring.delete"}

// codeShape is what an audit action code looks like: dotted lower-case words.
var codeShape = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`)

// auditActionsInSource finds every audit action code Herald's code writes, in every Go
// file of the module but tests, in two passes. First the codes written out where an
// entry is made: the literal given to one of the writers above, or as the Action of an
// audit.Entry literal. Then, because some writers take a code chosen a line
// earlier (action := "user.enable"; a table of alert moves), the literals chosen as an
// action. A code built by concatenation must be listed here (monitoringMethods); any
// other is returned in unknown.
func auditActionsInSource(t *testing.T) (codes map[string]string, unknown []string) {
	t.Helper()
	codes = map[string]string{}
	fset := token.NewFileSet()
	var files []*ast.File
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err == nil {
			files = append(files, f)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	literal := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(lit.Value)
		return s, err == nil
	}
	note := func(e ast.Expr) {
		pos := fset.Position(e.Pos()).String()
		if s, ok := literal(e); ok {
			codes[s] = pos
			return
		}
		if b, ok := e.(*ast.BinaryExpr); ok {
			if s, ok := literal(b.X); ok && s == "monitoring." {
				for _, m := range monitoringMethods {
					codes[m] = pos
				}
				return
			}
			unknown = append(unknown, pos)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if i, ok := auditWriters[sel.Sel.Name]; ok && len(n.Args) > i && len(n.Args) >= 4 {
					note(n.Args[i])
				}
			case *ast.CompositeLit:
				if !isAuditEntry(n.Type, f.Name.Name) {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Action" {
							note(kv.Value)
						}
					}
				}
			}
			return true
		})
	}
	// The second pass: codes chosen before the call. A literal is taken when it is
	// assigned to a name, or given for a field or key, that says action, or is the action
	// field of a struct written positionally (a table of moves).
	actionField := map[string]int{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				i := 0
				for _, fl := range st.Fields.List {
					for _, name := range fl.Names {
						if name.Name == "action" {
							actionField[ts.Name.Name] = i
						}
						i++
					}
				}
			}
			return true
		})
	}
	says := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && strings.Contains(strings.ToLower(id.Name), "action")
	}
	take := func(e ast.Expr) {
		if s, ok := literal(e); ok && codeShape.MatchString(s) {
			if _, seen := codes[s]; !seen {
				codes[s] = fset.Position(e.Pos()).String()
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range n.Lhs {
					if says(lhs) && len(n.Rhs) == len(n.Lhs) {
						take(n.Rhs[i])
					}
				}
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if !says(name) || i >= len(n.Values) {
						continue
					}
					take(n.Values[i])
					if m, ok := n.Values[i].(*ast.CompositeLit); ok {
						for _, el := range m.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok {
								take(kv.Value)
							}
						}
					}
				}
			case *ast.KeyValueExpr:
				if says(n.Key) {
					take(n.Value)
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok {
					if i, ok := actionField[id.Name]; ok && i < len(n.Elts) {
						take(n.Elts[i])
					}
				}
			}
			return true
		})
	}
	return codes, unknown
}

// isAuditEntry reports whether a composite literal's type, in a file of package pkg, is
// audit.Entry (or Entry inside package audit).
func isAuditEntry(e ast.Expr, pkg string) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return pkg == "audit" && e.Name == "Entry"
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "audit" && e.Sel.Name == "Entry"
	}
	return false
}

// TestEveryAuditActionHasASentence: the audit page shows an entry as its action's
// sentence (audit.event.<action, "." written "_">) in the reader's language; an action
// without one shows as a bare code. Every action code found in the source needs a
// sentence in both catalogs.
func TestEveryAuditActionHasASentence(t *testing.T) {
	codes, unknown := auditActionsInSource(t)
	for _, pos := range unknown {
		t.Errorf("%s: an audit action code built at run time; write each code out as a string", pos)
	}
	// Guard the scanner itself: codes written in each of the ways it knows.
	for _, want := range []string{"user.login", "user.login_failed", "apikey.auth_failed", "batch.expire", "template.update",
		"account.disable", "alert.resolve", "recipients.upsert", "monitoring.delete"} {
		if _, ok := codes[want]; !ok {
			t.Errorf("the scan did not find %s; it finds %d codes", want, len(codes))
		}
	}
	names := make([]string, 0, len(codes))
	for code := range codes {
		names = append(names, code)
	}
	slices.Sort(names)
	for _, code := range names {
		id := "audit.event." + strings.ReplaceAll(code, ".", "_")
		for _, lang := range i18n.Languages {
			if !i18n.Has(lang, id) {
				t.Errorf("%s: audit action %s has no sentence (%s) in the %s catalog", codes[code], code, id, lang)
			}
		}
	}
}
