package templates

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
	"unicode/utf8"

	"herald/channels"
	"herald/i18n"
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

// maxAnyContentBytes is the largest message any platform accepts, in UTF-8 bytes: the
// cap of a render for no platform in particular (the sample render on save, the
// editor's preview).
var maxAnyContentBytes = channels.LargestCapBytes()

// limitError is a render stopped by its budget, or a construct refused; its message is
// for the template's author: a catalog key (locales/templates.*.toml) and its data,
// with Error giving the English text.
type limitError struct {
	key  string
	args []any
}

func (e *limitError) Error() string { return i18n.In(i18n.English, e.key, e.args...) }

// Msg is the message as a catalog message, for the author's language (see keyedError).
func (e *limitError) Msg() i18n.Msg { return i18n.M(e.key, e.args...) }

// limitErrorf makes a limitError of a templates.limit key.
func limitErrorf(key string, args ...any) error {
	return &limitError{key: "templates.limit." + key, args: args}
}

// budget bounds one render: it is the writer the template executes into, and the
// functions charge it too, since text/template can only be stopped from inside a write
// or a function call. It refuses output past the platform's cap (counted as the
// platform counts, bytes or characters), function results past funcWorkFactor times
// that cap, and anything after the deadline.
type budget struct {
	out      bytes.Buffer
	cap      channels.ContentCap // the platform's; in bytes, maxAnyContentBytes, for none
	written  int                 // output so far, in the cap's unit
	work     int                 // bytes functions may still produce
	platform string
	deadline time.Time
	ctx      context.Context
}

func newBudget(ctx context.Context, platform string) *budget {
	limit := channels.ContentCap{Max: maxAnyContentBytes, Unit: channels.Bytes}
	if platform != "" {
		limit = channels.Cap(platform)
	}
	return &budget{cap: limit, work: funcWorkFactor * limit.MaxBytes(), platform: platform,
		deadline: time.Now().Add(renderTimeout), ctx: ctx}
}

// Write implements io.Writer, refusing to grow past the cap. text/template writes
// whole strings (a text node, a value), so a write never splits a character.
func (b *budget) Write(p []byte) (int, error) {
	if err := b.inTime(); err != nil {
		return 0, err
	}
	n := len(p)
	if b.cap.Unit == channels.Characters {
		n = utf8.RuneCount(p)
	}
	if b.written+n > b.cap.Max {
		return 0, b.tooLong("")
	}
	b.written += n
	return b.out.Write(p)
}

// inTime reports a render past its deadline or abandoned by its caller.
func (b *budget) inTime() error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if time.Now().After(b.deadline) {
		return limitErrorf("too_slow", "Timeout", renderTimeout.String())
	}
	return nil
}

// tooLong says the render (fn "") or the function fn made more than the cap.
func (b *budget) tooLong(fn string) error {
	what := "renders"
	if fn != "" {
		what = "makes"
	}
	if b.platform == "" {
		return limitErrorf(what+"_any", "Func", fn, "Max", b.cap.Max)
	}
	return limitErrorf(what+"_"+string(b.cap.Unit), "Func", fn, "Max", b.cap.Max, "Platform", b.platform)
}

// spend charges a function's result, refusing one that could never fit a message and
// any past the render's share of function work.
func (b *budget) spend(name, result string) (string, error) {
	if err := b.inTime(); err != nil {
		return "", err
	}
	if !b.cap.Fits(result) {
		return "", b.tooLong(name)
	}
	if b.work -= len(result); b.work < 0 {
		return "", limitErrorf("work", "Max", funcWorkFactor*b.cap.MaxBytes())
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

// limitMessage returns the author's message, in English, of a render stopped by its
// budget or by a refused construct or printf format, whether the writer or a function
// reported it.
func limitMessage(err error) (string, bool) {
	var le *limitError
	if errors.As(err, &le) {
		return le.Error(), true
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
// It checks every template the source defines (a text/template or html/template
// set), with the construct's position.
func checkConstructs[T interface {
	*template.Template | *htmltemplate.Template
}](templates []T) error {
	for _, tp := range templates {
		var tree *parse.Tree
		switch t := any(tp).(type) {
		case *template.Template:
			tree = t.Tree
		case *htmltemplate.Template:
			tree = t.Tree
		}
		if tree == nil {
			continue
		}
		if err := checkNode(tree, tree.Root); err != nil {
			return err
		}
	}
	return nil
}

func checkNode(tree *parse.Tree, node parse.Node) error {
	// refuse reports a construct with its position as .Line, e.g. 1:8.
	refuse := func(key string) error {
		line, col := position(tree, node)
		return limitErrorf(key, "Line", line, "Col", col)
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
		return refuse("range")
	case *parse.TemplateNode:
		return refuse("template_call")
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
					le := err.(*limitError)
					line, col := position(tree, n)
					return &limitError{key: le.key, args: append([]any{"Line", line, "Col", col}, le.args...)}
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

// position is the line and column of node in its template.
func position(tree *parse.Tree, node parse.Node) (line, col string) {
	location, _ := tree.ErrorContext(node) // "body:1:8"
	_, lineCol, _ := strings.Cut(location, ":")
	line, col, _ = strings.Cut(lineCol, ":")
	return line, col
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
				return limitErrorf("printf_star_" + what)
			}
			start := i
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				i++
			}
			if digits := format[start:i]; digits != "" {
				if n, err := strconv.Atoi(digits); err != nil || n > maxFormatWidth {
					return limitErrorf("printf_"+what, "Value", digits, "Max", maxFormatWidth)
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
