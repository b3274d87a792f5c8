package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/smtp"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"herald/directory"
	"herald/internal/testenv"
	"herald/sending"
)

// emailBenchMessages is how many messages each email measure sends.
const emailBenchMessages = 5000

// BenchmarkEmail measures email against a local SMTP sink (a go-smtp server that takes
// every message): a raw pooled Go SMTP client with 10 sessions (the ceiling of the
// delivery path), then Herald through its API on MySQL + Redis (5,000 single-recipient
// requests from 16 keep-alive callers with no worker running, the intake's own ceiling;
// then, once a worker has sent those, 5,000 more while it sends, then one fan-out of
// 5,000) and in embedded mode (the same single-recipient run and fan-out, in one
// process). It prints one line:
// `email raw_smtp_per_s=… email_intake_only_per_s=… email_mysql_per_s=… email_mysql_ratio=… email_fanout_mysql_per_s=…
// email_fanout_ratio=… email_embedded_per_s=… email_embedded_ratio=… email_fanout_embedded_per_s=… api_accept_p99_ms=…
// smtp_conns_per_1000=…`. HERALD_BENCH_EMAIL_POOL and HERALD_BENCH_EMAIL_SESSION_MESSAGES
// set the account's pool_size and session_messages (pool 20 with 1 message a session is
// one connection per message); HERALD_BENCH_EMAIL_RTT (e.g. 2ms) puts the sink a round
// trip away, as a relay on another host is.
func BenchmarkEmail(b *testing.B) {
	needMySQLAndRedis(b)
	pool := fmt.Sprint(envInt("HERALD_BENCH_EMAIL_POOL", 0))
	perSession := fmt.Sprint(envInt("HERALD_BENCH_EMAIL_SESSION_MESSAGES", 0))
	// A relay on another host: every answer of the sink arrives this long after it was sent.
	rtt, _ := time.ParseDuration(os.Getenv("HERALD_BENCH_EMAIL_RTT"))
	for range b.N {
		fmt.Fprintf(os.Stderr, "\n%s pool_size=%s session_messages=%s rtt=%s\n", machineLine(), pool, perSession, rtt)
		sink := testenv.StartSMTPSinkAfter(b, rtt)
		raw := rawSMTP(b, sink, 10, emailBenchMessages)

		rig := newBenchRig(b, emailBenchMessages, 0)
		rig.useEmail(b, sink, pool, perSession)
		// The intake's own ceiling: the same requests with no worker sending beside them.
		backlog := sink.Messages() + emailBenchMessages
		took, elapsed := rig.acceptMany(b, emailBenchMessages, 16)
		intake := float64(len(took)) / elapsed.Seconds()
		worker := rig.startWorker(b, rig.h.App.Config.WorkerConcurrency)
		waitTaken(b, sink, backlog)
		connsBefore, msgsBefore := sink.Connections(), sink.Messages()
		single, accept99 := rig.emailDistinct(b, sink, emailBenchMessages, 16)
		fanout := rig.emailFanOut(b, sink, emailBenchMessages)
		worker.stop(b)
		conns := float64(sink.Connections()-connsBefore) / float64(sink.Messages()-msgsBefore) * 1000

		embedded, embeddedFanout := embeddedEmail(b, sink, pool, perSession, emailBenchMessages, 16)

		line := "email"
		for _, f := range []struct {
			name   string
			value  float64
			digits int
		}{
			{"raw_smtp_per_s", raw, 0},
			{"email_intake_only_per_s", intake, 0},
			{"email_mysql_per_s", single, 0},
			{"email_mysql_ratio", ratio(single, raw), 2},
			{"email_fanout_mysql_per_s", fanout, 0},
			{"email_fanout_ratio", ratio(fanout, raw), 2},
			{"email_embedded_per_s", embedded, 0},
			{"email_embedded_ratio", ratio(embedded, raw), 2},
			{"email_fanout_embedded_per_s", embeddedFanout, 0},
			{"api_accept_p99_ms", ms(accept99), 1},
			{"smtp_conns_per_1000", conns, 1},
		} {
			b.ReportMetric(f.value, f.name)
			line += fmt.Sprintf(" %s=%.*f", f.name, f.digits, f.value)
		}
		fmt.Fprintln(os.Stderr, line)
	}
}

// rawSMTP sends n messages to the sink from sessions goroutines, each on one session
// kept open, and returns messages per second. Each message is the conversation Herald
// has with a server that offers PIPELINING: RSET, MAIL, RCPT and DATA in one write, then
// the message.
func rawSMTP(b *testing.B, sink *testenv.SMTPSink, sessions, n int) float64 {
	msg := []byte("From: herald@example.com\r\nTo: p@example.com\r\nSubject: bench\r\n\r\nbench raw\r\n")
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range sessions {
		wg.Go(func() {
			c, err := smtp.Dial(sink.Addr)
			if err == nil {
				err = c.Hello("localhost")
			}
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Quit()
			t := c.Text
			for next.Add(1) <= int64(n) {
				t.W.WriteString("RSET\r\nMAIL FROM:<herald@example.com>\r\nRCPT TO:<p@example.com>\r\nDATA\r\n")
				err := t.W.Flush()
				for _, code := range []int{250, 250, 25, 354} {
					if err == nil {
						_, _, err = t.ReadResponse(code)
					}
				}
				if err == nil {
					w := t.DotWriter()
					if _, err = w.Write(msg); err == nil {
						err = w.Close()
					}
				}
				if err == nil {
					_, _, err = t.ReadResponse(250)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// useEmail points the rig at an email account on the sink, with the pool settings ("0":
// the default); the rig's people have email addresses from the start.
func (r *benchRig) useEmail(b *testing.B, sink *testenv.SMTPSink, pool, perSession string) {
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(sink.Addr)
	a := &sending.Account{Name: "mail-bench", Platform: "email", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Config: emailConfig(host, port, pool, perSession)}
	if err := r.h.App.Store.Sending().SaveAccount(ctx, a); err != nil {
		b.Fatal(err)
	}
	r.acct = a
}

func emailConfig(host, port, pool, perSession string) map[string]string {
	cfg := map[string]string{"host": host, "port": port, "from": "herald@example.com", "tls": "none"}
	if pool != "0" {
		cfg["pool_size"] = pool
	}
	if perSession != "0" {
		cfg["session_messages"] = perSession
	}
	return cfg
}

// emailDistinct sends n single-recipient requests from callers keep-alive callers while
// a worker sends, and returns the messages per second from the first request until the
// sink has taken them all, and the API's accept p99.
func (r *benchRig) emailDistinct(b *testing.B, sink *testenv.SMTPSink, n, callers int) (rate float64, accept99 time.Duration) {
	want := sink.Messages() + n
	start := time.Now()
	took, _ := r.acceptMany(b, n, callers)
	last := waitTaken(b, sink, want)
	_, p99 := percentiles(took)
	return float64(n) / last.Sub(start).Seconds(), p99
}

// acceptMany sends n single-recipient requests from callers keep-alive callers and
// returns how long each took to be accepted and how long they all took.
func (r *benchRig) acceptMany(b *testing.B, n, callers int) (took []time.Duration, elapsed time.Duration) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				t0 := time.Now()
				_, accepted, err := r.send(client, []string{r.people[i%len(r.people)]}, "bench email")
				d := time.Since(t0)
				if err != nil || accepted != 1 {
					b.Errorf("request %d: accepted %d, %v", i, accepted, err)
					return
				}
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return took, time.Since(start)
}

// emailFanOut sends one request to n people and returns messages per second from the
// request until the sink has taken them all.
func (r *benchRig) emailFanOut(b *testing.B, sink *testenv.SMTPSink, n int) float64 {
	want := sink.Messages() + n
	start := time.Now()
	if _, accepted, err := r.send(&http.Client{Timeout: 5 * time.Minute}, r.people[:n], "bench email fan-out"); err != nil || accepted != n {
		b.Fatalf("fan-out: accepted %d, %v", accepted, err)
	}
	return float64(n) / waitTaken(b, sink, want).Sub(start).Seconds()
}

// waitTaken waits until the sink has taken want messages in all and returns when.
func waitTaken(b *testing.B, sink *testenv.SMTPSink, want int) time.Time {
	deadline := time.Now().Add(10 * time.Minute)
	for sink.Messages() < want {
		if time.Now().After(deadline) {
			b.Fatalf("the sink took %d of %d messages in 10 minutes", sink.Messages(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now()
}

// embeddedEmail runs the single-recipient measure and the fan-out on a Herald in embedded
// mode (SQLite and in-process Redis, one process) and returns their rates.
func embeddedEmail(b *testing.B, sink *testenv.SMTPSink, pool, perSession string, n, callers int) (single, fanout float64) {
	env := map[string]string{"HERALD_DATA_DIR": b.TempDir(), "HERALD_ADMIN_PASSWORD": testAdminPassword, "HERALD_DEFAULT_LANGUAGE": "en"}
	h := startHerald(b, env)
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(sink.Addr)
	a := &sending.Account{Name: "mail-bench", Platform: "email", Enabled: true, AllowPrivateNetwork: true, MaxAttempts: 3, Healthy: true,
		Config: emailConfig(host, port, pool, perSession)}
	if err := h.App.Store.Sending().SaveAccount(ctx, a); err != nil {
		b.Fatal(err)
	}
	list := make([]directory.Recipient, n)
	people := make([]string, n)
	for i := range list {
		id := fmt.Sprintf("B%06d", i)
		list[i] = directory.Recipient{ExternalID: id, Name: id, OrgType: directory.Branch, Email: fmt.Sprintf("b%06d@example.com", i), Active: true}
		people[i] = id
	}
	if _, err := h.App.Store.Directory().UpsertRecipients(ctx, list); err != nil {
		b.Fatal(err)
	}
	_, key, err := h.App.Store.Access().CreateAPIKey(ctx, "bench", "send", "bench")
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{h: h, acct: a, people: people, key: key}
	single, _ = r.emailDistinct(b, sink, n, callers)
	return single, r.emailFanOut(b, sink, n)
}
