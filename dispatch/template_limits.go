package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// What one template may make Herald do. Templates are written by operators but rendered
// once per recipient of every request that names them, send-only API keys included, so
// no branch of one may cost more than a message is worth. Three layers bound it:
// checkConstructs refuses loops, template calls and wide printf verbs when a template is
// compiled (on save, on preview, and again at every intake, so one planted in the
// database directly is refused too); the functions refuse oversized results; and every
// render writes into a budget that stops it at the platform's size cap or its deadline.
const (
	// maxTemplateSource bounds a subject or body as written. With no loops allowed it
	// also bounds how many steps a render can take.
	maxTemplateSource = 64 << 10
	// maxFormatWidth bounds printf's widths and precisions: "%999999d" is a megabyte.
	maxFormatWidth = 100
	// renderTimeout is how long one render may take; a normal one takes microseconds.
	renderTimeout = 100 * time.Millisecond
	// funcWorkFactor bounds what functions may produce in one render, as a multiple of
	// the message cap: a chain of `$a = printf "%s%s" $a $a` doubles without writing.
	funcWorkFactor = 8
)

// maxAnyContentBytes is the largest message any platform accepts: the cap of a render
// for no platform in particular (the sample render on save, the editor's preview).
var maxAnyContentBytes = func() int {
	largest := 0
	for _, n := range maxContentBytes {
		largest = max(largest, n)
	}
	return largest
}()

// limitError is a render stopped by its budget; its message is for the template's author.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func limitErrorf(format string, args ...any) error {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// budget bounds one render: it is the writer the template executes into, and the
// functions charge it too, since text/template can only be stopped from inside a write
// or a function call. It refuses output past the platform's cap, function results past
// funcWorkFactor times that cap, and anything after the deadline.
type budget struct {
	out      bytes.Buffer
	limit    int
	work     int // bytes functions may still produce
	platform string
	deadline time.Time
	ctx      context.Context
}

func newBudget(ctx context.Context, platform string) *budget {
	limit := maxAnyContentBytes
	if platform != "" {
		limit = MaxContentBytes(platform)
	}
	return &budget{limit: limit, work: funcWorkFactor * limit, platform: platform,
		deadline: time.Now().Add(renderTimeout), ctx: ctx}
}

// Write implements io.Writer, refusing to grow past the cap.
func (b *budget) Write(p []byte) (int, error) {
	if err := b.inTime(); err != nil {
		return 0, err
	}
	if b.out.Len()+len(p) > b.limit {
		return 0, b.tooLong("renders")
	}
	return b.out.Write(p)
}

// inTime reports a render past its deadline or abandoned by its caller.
func (b *budget) inTime() error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if time.Now().After(b.deadline) {
		return limitErrorf("takes longer than %v to render", renderTimeout)
	}
	return nil
}

func (b *budget) tooLong(what string) error {
	if b.platform == "" {
		return limitErrorf("%s more than %d bytes, more than any platform accepts", what, b.limit)
	}
	return limitErrorf("%s more than %d bytes; %s accepts %d", what, b.limit, b.platform, b.limit)
}

// spend charges a function's result, refusing one that could never fit a message and
// any past the render's share of function work.
func (b *budget) spend(name, result string) (string, error) {
	if err := b.inTime(); err != nil {
		return "", err
	}
	if len(result) > b.limit {
		return "", b.tooLong(name + " makes")
	}
	if b.work -= len(result); b.work < 0 {
		return "", limitErrorf("functions make more than %d bytes in one render", funcWorkFactor*b.limit)
	}
	return result, nil
}

// funcs is the whole function set a template may call beyond text/template's
// comparisons, len, index, slice and not/and/or: Herald's string helpers, and the
// builtins that can grow a string (print, printf, println, html, js, urlquery) replaced
// by versions that, like the helpers, charge their result to the render in progress.
// current returns that render's budget.
func funcs(current func() *budget) template.FuncMap {
	charged := func(name string, f func(...any) string) func(...any) (string, error) {
		return func(args ...any) (string, error) { return current().spend(name, f(args...)) }
	}
	return template.FuncMap{
		"upper": func(s string) (string, error) { return current().spend("upper", strings.ToUpper(s)) },
		"lower": func(s string) (string, error) { return current().spend("lower", strings.ToLower(s)) },
		"trim":  func(s string) (string, error) { return current().spend("trim", strings.TrimSpace(s)) },
		"default": func(def, v string) (string, error) {
			if v == "" {
				v = def
			}
			return current().spend("default", v)
		},
		"print":    charged("print", fmt.Sprint),
		"println":  charged("println", fmt.Sprintln),
		"html":     charged("html", template.HTMLEscaper),
		"js":       charged("js", template.JSEscaper),
		"urlquery": charged("urlquery", template.URLQueryEscaper),
		"printf": func(format string, args ...any) (string, error) {
			// The format may come from a variable, so it is checked here as well as on save.
			if err := checkFormat(format); err != nil {
				return "", err
			}
			return current().spend("printf", fmt.Sprintf(format, args...))
		},
	}
}

// limitMessage returns the author's message of a render stopped by its budget or by a
// refused printf format, whether the writer or a function reported it.
func limitMessage(err error) (string, bool) {
	var le *limitError
	if errors.As(err, &le) {
		return le.msg, true
	}
	return "", false
}

// checkConstructs refuses what could make a render loop, recurse or balloon:
//   - range, altogether: the declared variables are single strings and .recipient a
//     handful of fields, so a message template has nothing to loop over, while
//     `range 1000000`, nested ranges or ranges over .recipient cost CPU on every send
//     whether or not they write anything;
//   - calling a template (template, block), which can recurse;
//   - printf widths and precisions above maxFormatWidth, or taken from an argument.
//
// It checks every template the source defines, with the construct's position.
func checkConstructs(tp *template.Template) error {
	for _, t := range tp.Templates() {
		if t.Tree == nil {
			continue
		}
		if err := checkNode(t.Tree, t.Tree.Root); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(tree *parse.Tree, node parse.Node) error {
	refuse := func(format string, args ...any) error {
		location, _ := tree.ErrorContext(node)
		_, lineCol, _ := strings.Cut(location, ":")
		return limitErrorf("line "+lineCol+": "+format, args...)
	}
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, child := range n.Nodes {
			if err := checkNode(tree, child); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		return refuse("range is not allowed: variables hold single values, so there is nothing to loop over")
	case *parse.TemplateNode:
		return refuse("calling a template (template, block) is not allowed")
	case *parse.ActionNode:
		return checkNode(tree, n.Pipe)
	case *parse.IfNode:
		return checkBranch(tree, &n.BranchNode)
	case *parse.WithNode:
		return checkBranch(tree, &n.BranchNode)
	case *parse.PipeNode:
		if n == nil {
			return nil
		}
		for _, cmd := range n.Cmds {
			if err := checkNode(tree, cmd); err != nil {
				return err
			}
		}
	case *parse.CommandNode:
		if len(n.Args) > 1 {
			ident, isIdent := n.Args[0].(*parse.IdentifierNode)
			format, isString := n.Args[1].(*parse.StringNode)
			if isIdent && ident.Ident == "printf" && isString {
				if err := checkFormat(format.Text); err != nil {
					return refuse("%v", err)
				}
			}
		}
		for _, arg := range n.Args {
			if err := checkNode(tree, arg); err != nil {
				return err
			}
		}
	case *parse.ChainNode:
		return checkNode(tree, n.Node)
	}
	return nil
}

func checkBranch(tree *parse.Tree, b *parse.BranchNode) error {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if err := checkNode(tree, n); err != nil {
			return err
		}
	}
	return nil
}

// checkFormat refuses printf widths and precisions above maxFormatWidth, and ones taken
// from an argument (*), whose size the template's author does not control.
func checkFormat(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0 {
			i++
		}
		for _, what := range []string{"width", "precision"} {
			if what == "precision" {
				if i >= len(format) || format[i] != '.' {
					break
				}
				i++
			}
			i = skipArgIndex(format, i)
			if i < len(format) && format[i] == '*' {
				return limitErrorf("printf %s from an argument (*) is not allowed", what)
			}
			start := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			if digits := format[start:i]; digits != "" {
				if n, err := strconv.Atoi(digits); err != nil || n > maxFormatWidth {
					return limitErrorf("printf %s %s exceeds %d", what, digits, maxFormatWidth)
				}
			}
		}
		i = skipArgIndex(format, i) // i is now at the verb, which the loop steps over
	}
	return nil
}

// skipArgIndex steps over an explicit argument index such as [2].
func skipArgIndex(format string, i int) int {
	if i < len(format) && format[i] == '[' {
		if end := strings.IndexByte(format[i:], ']'); end >= 0 {
			return i + end + 1
		}
	}
	return i
}
