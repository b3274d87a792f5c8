package channels_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"herald/channels"
	"herald/internal/testenv"
)

// newSinkEmail is an email sender to a fresh sink, with extra settings.
func newSinkEmail(t *testing.T, extra map[string]string) (*channels.Email, *testenv.SMTPSink) {
	t.Helper()
	sink := testenv.StartSMTPSink(t)
	return emailTo(t, sink, extra), sink
}

// emailTo is an email sender to sink, with extra settings.
func emailTo(t *testing.T, sink *testenv.SMTPSink, extra map[string]string) *channels.Email {
	t.Helper()
	host, port, _ := net.SplitHostPort(sink.Addr)
	cfg := map[string]string{"host": host, "port": port, "from": "herald@example.com", "tls": "none"}
	for k, v := range extra {
		cfg[k] = v
	}
	e, err := channels.NewEmail(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// Sessions are reused: 200 messages from 8 goroutines go over at most pool_size
// connections, with RSET between messages, and QUIT ends them on Close.
func TestSMTPSessionsAreReused(t *testing.T) {
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "3"})
	testenv.SendConcurrently(t, e, 200)
	if sink.Messages() != 200 || sink.Connections() > 3 {
		t.Fatalf("%d messages over %d connections; want 200 over at most 3", sink.Messages(), sink.Connections())
	}
	// The sink offers PIPELINING: each transaction begins in one write, not four.
	if got := sink.Pipelined(); got < 190 {
		t.Errorf("%d of 200 transactions began with MAIL, RCPT and DATA in one write; want (nearly) all", got)
	}
	if rset := sink.Commands("RSET"); rset < 200-3 {
		t.Errorf("%d RSETs for 200 messages on %d sessions; want one before every message but each session's first", rset, sink.Connections())
	}
	if sink.Commands("QUIT") != 0 {
		t.Errorf("sessions ended (QUIT %d) before Close", sink.Commands("QUIT"))
	}
	e.Close()
	if got := sink.Commands("QUIT"); got != sink.Connections() {
		t.Errorf("QUIT %d times after Close, want once per session (%d)", got, sink.Connections())
	}
}

// A relay that takes two connections from a client refuses a third with 421: the pool
// of six learns the ceiling and its messages wait for the two sessions instead of
// failing. Once the ceiling's hold is over, the pool tries more sessions again.
func TestSMTPPoolLearnsRelayConnectionLimit(t *testing.T) {
	channels.SetSMTPLimitHold(t, 300*time.Millisecond)
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "6"})
	sink.LimitConnections(2)
	testenv.SendConcurrently(t, e, 200)
	if sink.Messages() != 200 || sink.MostConnections() > 2 {
		t.Fatalf("%d messages, at most %d connections open at once; want 200 over at most 2", sink.Messages(), sink.MostConnections())
	}
	// The first burst of opens meets the limit; after that the pool keeps to it.
	if got := sink.Refused(); got < 1 || got > 6 {
		t.Errorf("%d connections refused; want the few of the first burst (1 to 6)", got)
	}

	sink.LimitConnections(0)
	time.Sleep(400 * time.Millisecond)
	testenv.SendConcurrently(t, e, 200)
	if got := sink.MostConnections(); got <= 2 {
		t.Errorf("at most %d connections open at once after the hold; want the pool to grow past the old ceiling", got)
	}
}

// A message waiting, under a learnt ceiling, for a session that does not come back in
// time fails as a wait, not as the relay's refusal; the session it waited for goes on
// to the next message.
func TestSMTPWaitForSessionEnds(t *testing.T) {
	// Each answer takes 200 ms: a message on a fresh session takes about 800 ms.
	sink := testenv.StartSMTPSinkAfter(t, 200*time.Millisecond)
	sink.LimitConnections(1)
	e := emailTo(t, sink, map[string]string{"pool_size": "2"})
	first := make(chan error, 1)
	go func() { first <- testenv.SendMail(e, 1) }()
	time.Sleep(50 * time.Millisecond)
	// The relay refuses this one's connection at once; it waits for the first one's
	// session, which is still busy when its 500 ms are over.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := e.Send(ctx, channels.Message{ID: "m2", To: "p2@example.com", Title: "Ledger", Content: "Ledger 42"})
	if err == nil || !strings.Contains(err.Error(), "waiting for an SMTP session") {
		t.Fatalf("second message: %v; want it to fail waiting for a session", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first message: %v", err)
	}
	if err := testenv.SendMail(e, 3); err != nil {
		t.Fatalf("third message: %v", err)
	}
	if sink.Messages() != 2 || sink.Refused() != 1 || sink.MostConnections() != 1 {
		t.Errorf("%d messages, %d connections refused, at most %d open; want 2, 1 and 1", sink.Messages(), sink.Refused(), sink.MostConnections())
	}
}

// A recipient refused within a pipelined transaction fails that message only, as a
// permanent refusal naming RCPT TO; the session goes on to the next message.
func TestSMTPRefusedRecipientInPipeline(t *testing.T) {
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "1"})
	sink.RefuseRecipient("nobody@example.com")
	_, err := e.Send(context.Background(), channels.Message{ID: "m-refused", To: "nobody@example.com", Title: "Ledger", Content: "Ledger 42"})
	ce := channels.Classify(err)
	if err == nil || !strings.Contains(err.Error(), "RCPT TO") || ce == nil || ce.Class != channels.Permanent {
		t.Fatalf("refused recipient: %v (%+v); want a permanent failure naming RCPT TO", err, ce)
	}
	for i := range 3 {
		if err := testenv.SendMail(e, i); err != nil {
			t.Fatalf("message %d after the refusal: %v", i, err)
		}
	}
	if sink.Messages() != 3 || sink.Connections() != 1 {
		t.Errorf("%d messages over %d connections; want 3 over the one session", sink.Messages(), sink.Connections())
	}
	if sink.Pipelined() != 4 {
		t.Errorf("%d of 4 transactions pipelined; the refusal must be met on the pipelined path", sink.Pipelined())
	}
}

// A session is closed after session_messages messages and a new one opened.
func TestSMTPSessionMessageCap(t *testing.T) {
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "1", "session_messages": "10"})
	for i := range 25 {
		if err := testenv.SendMail(e, i); err != nil {
			t.Fatal(err)
		}
	}
	// Sessions end with QUIT in the background once full; wait for the second.
	testenv.WaitFor(t, 5*time.Second, "two full sessions ended", func() bool { return sink.Commands("QUIT") == 2 })
	if sink.Connections() != 3 || sink.Messages() != 25 {
		t.Errorf("25 messages over %d connections; want 3 (10, 10, 5)", sink.Connections())
	}
}

// A session the server dropped while it waited is replaced, and the message goes on the
// new one: nothing is lost and nothing classified as failed.
func TestSMTPBrokenSessionIsReplaced(t *testing.T) {
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "1"})
	if err := testenv.SendMail(e, 1); err != nil {
		t.Fatal(err)
	}
	sink.DropAll()
	if err := testenv.SendMail(e, 2); err != nil {
		t.Fatalf("after the server dropped the idle session: %v", err)
	}
	if sink.Messages() != 2 || sink.Connections() != 2 {
		t.Errorf("%d messages over %d connections; want 2 over 2", sink.Messages(), sink.Connections())
	}
}

// A connection lost after the final dot is ambiguous: the error says so, is marked
// Ambiguous (the sender stops the message, recording the attempt as unknown), and the
// message is not sent again by the adapter.
func TestSMTPLostAfterDataIsNotRetried(t *testing.T) {
	e, sink := newSinkEmail(t, map[string]string{"pool_size": "1"})
	if err := testenv.SendMail(e, 1); err != nil {
		t.Fatal(err)
	}
	sink.LoseAfterData(true)
	err := testenv.SendMail(e, 2)
	ce := channels.Classify(err)
	if ce == nil || !ce.Ambiguous {
		t.Fatalf("lost after DATA: %v; want an ambiguous error", err)
	}
	if sink.Connections() != 1 {
		t.Errorf("the adapter opened %d connections; it must not send the message again", sink.Connections())
	}
	sink.LoseAfterData(false)
	if err := testenv.SendMail(e, 3); err != nil {
		t.Fatalf("the next message: %v", err)
	}
}

// Closing the sender (an edited account, a shutdown) ends its idle sessions with QUIT;
// a send after it opens a new session.
func TestSMTPCloseEndsSessions(t *testing.T) {
	e, sink := newSinkEmail(t, nil)
	for i := range 3 {
		if err := testenv.SendMail(e, i); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	if sink.Commands("QUIT") != sink.Connections() {
		t.Errorf("QUIT %d, connections %d; want every session ended", sink.Commands("QUIT"), sink.Connections())
	}
	before := sink.Connections()
	if err := testenv.SendMail(e, 9); err != nil {
		t.Fatal(err)
	}
	if sink.Connections() != before+1 {
		t.Errorf("a send after Close opened %d connections, want 1", sink.Connections()-before)
	}
}

// A message with an HTML alternative is multipart/alternative, text first; a mail
// reader's view of it (net/mail, mime, mime/multipart) gives back the Chinese subject,
// the text and the HTML exactly.
func TestEmailHTMLAlternative(t *testing.T) {
	e, sink := newSinkEmail(t, nil)
	m := channels.Message{ID: "m-html", To: "张三 <zhangsan@example.com>", Title: "任务逾期提醒：对账 42",
		Content: "您好，\n对账任务 42 已逾期。", HTML: "<p>您好，</p>\n<p><b>对账任务 42</b> 已逾期。</p>"}
	if _, err := e.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(sink.Message(0)))
	if err != nil {
		t.Fatal(err)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != m.Title {
		t.Errorf("subject %q (%v), want %q", subject, err, m.Title)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v), want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var got []string
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		partType, partParams, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if partParams["charset"] != "utf-8" || part.Header.Get("Content-Transfer-Encoding") != "base64" {
			t.Errorf("part %s: %v, want UTF-8 in base64", partType, part.Header)
		}
		body, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, part))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, partType+": "+strings.ReplaceAll(string(body), "\r\n", "\n"))
	}
	want := []string{"text/plain: " + m.Content, "text/html: " + m.HTML}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}
