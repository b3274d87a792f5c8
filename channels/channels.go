// Package channels holds the platform adapters behind one small interface, the one
// table of what each platform is (settings, address, content cap, documented limits,
// adapter), and the classification of their errors into the classes that drive
// Herald's retry policy. It knows no database and no simulator: the registry is given
// an Account value, and the sandbox platform's sender is handed to it.
package channels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"herald/i18n"
)

// Message is what an adapter delivers: one rendered message to one address.
type Message struct {
	ID      string // Herald's message id, sent as the request id where the platform allows
	To      string // the recipient's address on the platform
	MsgType string // "text" or "markdown"
	Title   string
	Content string
	// HTML is an HTML alternative of Content, which email sends beside it ("" for none).
	HTML string
	// Actions are buttons to show with the message where the platform has them (a WeCom
	// template card): an alert notice's 我来处理 and 已解决. A click comes back to
	// Herald's callback naming the action's Key and the message's ID (the card's task
	// id). Platforms without buttons send the content alone, which carries a link to the
	// same actions.
	Actions []Action
	// Group says the message is a post to a group chat rather than to one person: To
	// is then the chat's id for an application's group chat (a WeCom appchat chatid, a
	// Feishu chat_id), or the chat group's name for a group robot, which posts to the
	// one group it belongs to whatever To says.
	Group bool
	// Mentions are the people a group post @s, each with what the platforms @ people
	// by; the adapter renders them as its platform does.
	Mentions []Mention
	// Robot is which robot of a group robot account's pool posts the message, counted
	// from 0 in the order of the account's webhook URLs: the worker admits each post
	// against one robot's limits and names that robot here.
	Robot int
	// ProviderTemplate and Params are the provider-approved template a message is sent
	// as, where the platform sends templates rather than text (an SMS, a voice call's
	// speech): the provider's template code and its parameters, in the order the
	// template was mapped. Content stays the text the person receives, for the record
	// and the preview.
	ProviderTemplate string
	Params           []Param
}

// Mention is one person a group post @s. A platform @s by its user id where it has
// one, else by the mobile number (WeCom mentioned_list or mentioned_mobile_list,
// DingTalk atUserIds or atMobiles, Feishu <at user_id>).
type Mention struct {
	Name   string
	UserID string // the person's id on the account's platform ("" for none)
	Mobile string // "" for none
	// ExternalID is the person's staff id in Herald: the page of an alert's link posted
	// to a group offers the people the post @-ed by it. Adapters do not use it.
	ExternalID string `json:",omitempty"`
}

// Param is one parameter of a provider template.
type Param struct {
	Name  string
	Value string
}

// VoiceReport is what a voice provider reports back of a call it placed: whether the
// callee answered and which keys they pressed.
type VoiceReport struct {
	// MessageID is Herald's id of the message the call carried (sent to the provider
	// as its out id or session context).
	MessageID string
	// CallID is the provider's id of the call, which the send answered with (the
	// message's provider message id): Tencent's reports name the call by it alone, with
	// MessageID empty.
	CallID  string
	Callee  string // the number called
	Outcome string // VoiceAnswered, VoiceNoAnswer, VoiceBusy or VoiceFailed
	Keys    string // the digits pressed, in order ("" for none)
	At      time.Time
}

// VoiceReporter is a voice Sender that reads its provider's reports of the calls it
// placed, from a callback to /callbacks/voice/<account> (its headers and body). A
// report whose signature or token does not match is refused with ErrForgedReport.
type VoiceReporter interface {
	Reports(h http.Header, query url.Values, body []byte) ([]VoiceReport, error)
}

// ErrForgedReport refuses a voice report whose signature or token does not match.
var ErrForgedReport = errors.New("channels: the report's signature or token does not match")

// The outcomes of a call.
const (
	VoiceAnswered = "answered"
	VoiceNoAnswer = "no_answer"
	VoiceBusy     = "busy"
	VoiceFailed   = "failed"
)

// Action is a button shown with a message.
type Action struct {
	// Key is what a click reports back (AckAction, ResolveAction).
	Key string
	// Label is the button's words, in the reader's language.
	Label string
}

// The actions of an alert notice.
const (
	AckAction     = "ack"
	ResolveAction = "resolve"
)

// AlertActions are the buttons of an alert notice, 我来处理 and 已解决, in Chinese like
// every notice Herald writes itself (the catalog's ack.button keys, the words of the
// link's page).
func AlertActions() []Action {
	return []Action{
		{Key: AckAction, Label: i18n.In(i18n.Chinese, "ack.button.ack")},
		{Key: ResolveAction, Label: i18n.In(i18n.Chinese, "ack.button.resolve")},
	}
}

// Account is what an adapter needs of a sending account.
type Account struct {
	ID       int64
	Name     string
	Platform string
	Config   map[string]string // plain settings, secrets included (the caller unseals them)
	// AllowPrivateNetwork lets the account reach private and loopback addresses.
	AllowPrivateNetwork bool
	// UpdatedAt changes with every edit: a sender built before it is built again.
	UpdatedAt time.Time
}

// Receipt is what the platform said when it accepted a message.
type Receipt struct {
	ProviderMessageID string
}

// Sender delivers messages through one account of one platform.
type Sender interface {
	Send(ctx context.Context, m Message) (Receipt, error)
}

// Recaller is a Sender whose platform can take back a message it accepted, within the
// platform's recall window (RecallWindow).
type Recaller interface {
	// Recall takes back the message the platform accepted as receipt.ProviderMessageID,
	// addressed to m.To. It returns a classified *Error when the platform refuses.
	Recall(ctx context.Context, m Message, receipt Receipt) error
}

// Class is an error class (docs/retries.md); the retry policy is keyed by it.
type Class string

// The error classes.
const (
	Throttled   Class = "throttled"    // Herald's own limiter said wait
	RateLimited Class = "rate_limited" // the provider said too many
	Transient   Class = "transient"    // timeout, connection error, 5xx
	Auth        Class = "auth"         // bad or expired credentials
	Permanent   Class = "permanent"    // invalid recipient, rejected content, other 4xx
)

// Error is a classified delivery failure.
type Error struct {
	Class Class
	// Code is the provider's own code (HTTP status or platform error code), if any.
	Code string
	// RetryAfter is the provider's requested wait, when it gave one.
	RetryAfter time.Duration
	// Ambiguous marks a failure after which the platform may have taken the message
	// (a connection lost after the end of SMTP DATA): it is never retried on its own.
	Ambiguous bool
	Err       error
}

// Error reads "<class> (<code>): <cause>".
func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s (%s): %v", e.Class, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Class, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error.
func Errorf(class Class, code string, format string, args ...any) *Error {
	return &Error{Class: class, Code: code, Err: fmt.Errorf(format, args...)}
}

// Classify returns err as a classified error. Errors an adapter did not classify are
// transport failures: timeouts and network errors are transient, and so is anything
// unknown, because retrying an unknown failure a bounded number of times is safer than
// dropping the message.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return &Error{Class: Transient, Err: err}
	}
	return &Error{Class: Transient, Err: err}
}

// SettingError is a problem with one setting, of an account (Field is config.<key>)
// or of a callback (the field the caller named): Problem says what is wrong, in the
// reader's language.
type SettingError struct {
	Field   string
	Problem Note
}

func (e *SettingError) Error() string { return e.Field + ": " + e.Problem.String() }

// FieldProblem names the setting and its problem: a catalog key and its data, or, with
// no key, the text (kernel.SettingInvalid makes the field's failure of it).
func (e *SettingError) FieldProblem() (field, key, text string, args []any) {
	return e.Field, e.Problem.Key, e.Problem.Text, e.Problem.Args
}

// GroupSender is a Sender whose platform takes one content to many people in one call
// (DingTalk's work notices, WeCom's application messages). The worker groups the
// messages of a chunk that share their account and content into calls of at most
// MaxGroup messages; each message still has its own claim, admission and outcome.
type GroupSender interface {
	Sender
	// MaxGroup is the most messages one SendGroup call takes.
	MaxGroup() int
	// SendGroup delivers messages that share MsgType, Title and Content, each to its own
	// address, in one platform call, and returns one result per message, in order.
	SendGroup(ctx context.Context, ms []Message) []GroupResult
}

// GroupResult is what became of one message of a SendGroup call.
type GroupResult struct {
	Receipt Receipt
	Err     error
}
