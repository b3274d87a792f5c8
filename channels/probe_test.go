package channels

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"herald/i18n"
	"herald/simulator"
)

// Secrets distinctive enough that finding one in a report can only mean a leak.
const (
	probeWeComSecret = "wecom-corp-secret-9f2c"
	probeToken       = "bearer-token-7d41"
	probePassword    = "smtp-pass-55aa"
	probeHookSecret  = "hook-secret-31bd"
)

var probeSecrets = []string{probeWeComSecret, probeToken, probePassword, probeHookSecret}

// checkProbe checks a result against what a case wants: OK, the words the English
// summary and steps must contain, and no secret anywhere, in English or Chinese. Every
// text of the report must have its Chinese translation.
func checkProbe(t *testing.T, res ProbeResult, wantOK bool, summary, steps []string) {
	t.Helper()
	summaryText, stepLines := res.Summary.String(), res.Lines(i18n.English)
	t.Logf("OK %v, took %s: %s\n  %s", res.OK, res.Took, summaryText, strings.Join(stepLines, "\n  "))
	if res.OK != wantOK {
		t.Errorf("OK = %v, want %v\nsummary: %s\nsteps:\n  %s", res.OK, wantOK, summaryText, strings.Join(stepLines, "\n  "))
	}
	for _, w := range summary {
		if !strings.Contains(summaryText, w) {
			t.Errorf("summary %q does not contain %q", summaryText, w)
		}
	}
	all := strings.Join(stepLines, "\n")
	for _, w := range steps {
		if !strings.Contains(all, w) {
			t.Errorf("steps do not contain %q:\n  %s", w, strings.Join(stepLines, "\n  "))
		}
	}
	for _, lang := range i18n.Languages {
		text, lines := res.Summary.In(lang), strings.Join(res.Lines(lang), "\n")
		for _, s := range probeSecrets {
			if strings.Contains(text, s) || strings.Contains(lines, s) {
				t.Errorf("secret %q appears in the report (%s):\n%s\n%s", s, lang, text, lines)
			}
		}
		if strings.Contains(text, "\n") {
			t.Errorf("summary %q (%s) is more than one line", text, lang)
		}
		if text == "" {
			t.Errorf("empty summary in %s", lang)
		}
	}
	noMissingTranslations(t)
	if res.Took <= 0 || res.Took > probeTimeout+time.Second {
		t.Errorf("Took = %s", res.Took)
	}
}

// checkNothingSent fails the test if the simulator recorded a delivery.
func checkNothingSent(t *testing.T, sim *simulator.Simulator) {
	t.Helper()
	if d, s := sim.Deliveries(), sim.Stats(); len(d) != 0 || s.Accepted != 0 {
		t.Errorf("deliveries = %+v (stats %+v), want none", d, s)
	}
}

// probeAccount is an account as the console would hand it to Probe.
func probeAccount(platform string, allowPrivate bool, cfg map[string]string) Account {
	return Account{ID: 1, Name: platform + "-main", Platform: platform,
		AllowPrivateNetwork: allowPrivate, Config: cfg, UpdatedAt: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
}

// Probes against the simulator: each answers, or fails, as the platform would, and
// none of them delivers anything.
func TestProbe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		faults  simulator.Faults
		account func(rig *simRig) Account
		ok      bool
		summary []string
		steps   []string
	}{
		{
			name: "wecom token issued",
			account: func(rig *simRig) Account {
				return probeAccount("wecom", true, map[string]string{"corp_id": "ww0123", "secret": probeWeComSecret,
					"agent_id": "1000002", "base_url": rig.url + "/wecom"})
			},
			ok:      true,
			summary: []string{"WeCom issued an access token (valid 7200 s)"},
			steps:   []string{"GET http://127.0.0.1:", "/wecom/cgi-bin/gettoken?corpid=ww0123&corpsecret=*** → HTTP 200 OK, errcode 0 (ok), expires_in 7200"},
		},
		{
			name:   "wecom secret refused",
			faults: simulator.Faults{AuthFail: true},
			account: func(rig *simRig) Account {
				return probeAccount("wecom", true, map[string]string{"corp_id": "ww0123", "secret": probeWeComSecret,
					"agent_id": "1000002", "base_url": rig.url + "/wecom"})
			},
			summary: []string{"WeCom refused the credentials", "errcode 40001", "invalid credential"},
			steps:   []string{"corpsecret=***", "errcode 40001 (invalid credential)", "error: auth (40001)"},
		},
		{
			name: "dingtalk token issued and agent known",
			account: func(rig *simRig) Account {
				return probeAccount("dingtalk", true, map[string]string{"app_key": "dingkey", "app_secret": probeWeComSecret,
					"agent_id": "836390886", "base_url": rig.url + "/dingtalk"})
			},
			ok:      true,
			summary: []string{"DingTalk issued an access token (valid 7200 s) and knows agent_id 836390886"},
			steps: []string{"/dingtalk/gettoken?appkey=***&appsecret=*** → HTTP 200 OK, errcode 0 (ok), expires_in 7200",
				"/dingtalk/microapp/visible_scopes?access_token=*** agentId=836390886 → HTTP 200 OK, errcode 0 (ok), deptVisibleScopes 1, userVisibleScopes 0"},
		},
		{
			name:   "dingtalk secret refused",
			faults: simulator.Faults{AuthFail: true},
			account: func(rig *simRig) Account {
				return probeAccount("dingtalk", true, map[string]string{"app_key": "dingkey", "app_secret": probeWeComSecret,
					"agent_id": "836390886", "base_url": rig.url + "/dingtalk"})
			},
			summary: []string{"DingTalk refused the credentials", "errcode 40089", "invalid appkey or appsecret"},
			steps:   []string{"appsecret=***", "errcode 40089 (invalid appkey or appsecret)", "error: auth (40089)"},
		},
		{
			name: "email login accepted",
			account: func(rig *simRig) Account {
				return probeAccount("email", true, map[string]string{"host": rig.smtpHost, "port": rig.smtpPort,
					"from": "herald@example.com", "username": "herald", "password": probePassword, "tls": "none"})
			},
			ok:      true,
			summary: []string{"accepted the login of herald", "no mail was sent"},
			steps: []string{"connect 127.0.0.1:", "greeting → 220 herald-sim ESMTP ready", "EHLO localhost → 250, offers AUTH PLAIN LOGIN",
				"AUTH PLAIN as herald → 235", "QUIT → 221"},
		},
		{
			name: "email without STARTTLS on offer",
			account: func(rig *simRig) Account {
				return probeAccount("email", true, map[string]string{"host": rig.smtpHost, "port": rig.smtpPort,
					"from": "herald@example.com", "username": "herald", "password": probePassword})
			},
			summary: []string{"does not offer STARTTLS, which the account requires"},
			steps:   []string{"EHLO localhost → 250", "STARTTLS → not offered by the server", "error: auth: channels: email: the server does not offer STARTTLS"},
		},
		{
			name:   "email login refused",
			faults: simulator.Faults{AuthFail: true},
			account: func(rig *simRig) Account {
				return probeAccount("email", true, map[string]string{"host": rig.smtpHost, "port": rig.smtpPort,
					"from": "herald@example.com", "username": "herald", "password": probePassword, "tls": "none"})
			},
			summary: []string{"refused the credentials: 535 5.7.8 authentication failed"},
			steps:   []string{"greeting → 220", "error: auth (smtp 535)"},
		},
		{
			name:   "email without credentials",
			faults: simulator.Faults{AuthFail: true}, // would refuse MAIL, which a probe never sends
			account: func(rig *simRig) Account {
				return probeAccount("email", true, map[string]string{"host": rig.smtpHost, "port": rig.smtpPort,
					"from": "herald@example.com", "tls": "none"})
			},
			ok:      true,
			summary: []string{"no credentials are configured, so none were checked"},
			steps:   []string{"EHLO localhost → 250", "QUIT → 221"},
		},
		{
			name: "tianyuan HEAD answered",
			account: func(rig *simRig) Account {
				return probeAccount("tianyuan", true, map[string]string{"base_url": rig.url + "/tianyuan", "token": probeToken})
			},
			ok:      true,
			summary: []string{"answered HTTP 405 Method Not Allowed", "the token is checked on the first real send"},
			steps:   []string{"/tianyuan/messages with Authorization: Bearer *** → HTTP 405"},
		},
		{
			name:   "zhaohu HEAD answered",
			faults: simulator.Faults{AuthFail: true}, // applies to messages, not to HEAD
			account: func(rig *simRig) Account {
				return probeAccount("zhaohu", true, map[string]string{"base_url": rig.url + "/zhaohu", "path": "/messages", "token": probeToken})
			},
			ok:      true,
			summary: []string{"HTTP 405", "checked on the first real send"},
			steps:   []string{"HEAD http://127.0.0.1:"},
		},
		{
			name: "webhook HEAD answered",
			account: func(rig *simRig) Account {
				return probeAccount("webhook", true, map[string]string{"url": rig.url + "/webhook/herald?key=" + probeHookSecret, "secret": probeHookSecret})
			},
			ok:      true,
			summary: []string{"webhook receiver answered HTTP 405", "checked on the first real send"},
			steps:   []string{"/webhook/herald?key=*** → HTTP 405"},
		},
		{
			name:    "sandbox missing",
			account: func(*simRig) Account { return probeAccount("sandbox", false, nil) },
			summary: []string{"sandbox platform is not available"},
		},
		{
			name: "missing token",
			account: func(rig *simRig) Account {
				return probeAccount("tianyuan", true, map[string]string{"base_url": rig.url + "/tianyuan"})
			},
			summary: []string{"Invalid settings: config.token: is required"},
		},
		{
			name: "unknown key",
			account: func(rig *simRig) Account {
				return probeAccount("wecom", true, map[string]string{"corp_id": "ww0123", "secret": probeWeComSecret,
					"agent_id": "1000002", "base_url": rig.url + "/wecom", "colour": "red"})
			},
			summary: []string{"config.colour"},
		},
		{
			name:    "unknown platform",
			account: func(*simRig) Account { return probeAccount("pigeon", false, map[string]string{}) },
			summary: []string{`platform "pigeon" has no adapter`},
		},
		{
			name: "private address refused by the settings",
			account: func(rig *simRig) Account {
				return probeAccount("tianyuan", false, map[string]string{"base_url": rig.url + "/tianyuan", "token": probeToken})
			},
			summary: []string{"config.base_url: 127.0.0.1 is a loopback address", "allow_private_network"},
		},
		{
			name: "private address refused at dial",
			account: func(rig *simRig) Account {
				return probeAccount("webhook", false, map[string]string{"url": strings.Replace(rig.url, "127.0.0.1", "localhost", 1) + "/webhook/x"})
			},
			summary: []string{"blocked by Herald's network guard: 127.0.0.1 is a loopback address", "allow_private_network"},
			steps:   []string{"HEAD http://localhost:", "→ no answer", "error: permanent: channels: webhook: refused to connect"},
		},
		{
			name: "smtp private address refused at dial",
			account: func(rig *simRig) Account {
				return probeAccount("email", false, map[string]string{"host": "localhost", "port": rig.smtpPort,
					"from": "herald@example.com", "username": "herald", "password": probePassword})
			},
			summary: []string{"blocked by Herald's network guard", "allow_private_network"},
			steps:   []string{"error: permanent: channels: email: connecting to localhost:"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rig := startSim(t, simulator.Options{})
			rig.sim.SetFaults(tc.faults)
			res := NewRegistry(nil).Probe(context.Background(), tc.account(rig))
			checkProbe(t, res, tc.ok, tc.summary, tc.steps)
			checkNothingSent(t, rig.sim)
			for _, path := range []string{wecomSendPath, dingtalkSendPath} {
				if n := rig.hitCount(path); n != 0 {
					t.Errorf("%s called %d times", path, n)
				}
			}
		})
	}
}

// A HEAD request carries the send's bearer token and no body; a refused token is
// "credentials refused", and a server error is not OK either.
func TestProbeHeadAnswers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		switch {
		case len(body) != 0 || r.Method != http.MethodHead:
			w.WriteHeader(http.StatusTeapot)
		case strings.HasPrefix(r.URL.Path, "/broken"):
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.HasPrefix(r.URL.Path, "/moved"):
			http.Redirect(w, r, "https://elsewhere.example.com/hook?token="+probeToken, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/hook"):
			w.WriteHeader(http.StatusForbidden) // a receiver that wants a signature
		case r.Header.Get("Authorization") != "Bearer "+probeToken:
			w.WriteHeader(http.StatusUnauthorized)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(srv.Close)
	reg := NewRegistry(nil)
	for _, tc := range []struct {
		name    string
		account Account
		ok      bool
		summary []string
	}{
		{"token accepted", probeAccount("tianyuan", true, map[string]string{"base_url": srv.URL, "token": probeToken}),
			true, []string{"tianyuan endpoint answered HTTP 405", "the token is checked on the first real send"}},
		{"token refused", probeAccount("zhaohu", true, map[string]string{"base_url": srv.URL, "token": "wrong-token-0000"}),
			false, []string{"zhaohu endpoint answered HTTP 401 Unauthorized: credentials refused"}},
		{"server error", probeAccount("tianyuan", true, map[string]string{"base_url": srv.URL + "/broken", "token": probeToken}),
			false, []string{"HTTP 503 Service Unavailable, a server error", "checked on the first real send"}},
		{"redirect", probeAccount("tianyuan", true, map[string]string{"base_url": srv.URL + "/moved", "token": probeToken}),
			true, []string{"HTTP 302 Found", "sends do not follow its redirect (Location: https://elsewhere.example.com/hook?token=***)"}},
		{"webhook forbidden", probeAccount("webhook", true, map[string]string{"url": srv.URL + "/hook", "secret": probeHookSecret}),
			false, []string{"webhook receiver answered HTTP 403 Forbidden: credentials refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := reg.Probe(context.Background(), tc.account)
			steps := []string{"HEAD " + srv.URL}
			if tc.account.Platform == "webhook" {
				steps = append(steps, "note: the test request was unsigned")
			}
			checkProbe(t, res, tc.ok, tc.summary, steps)
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range seen {
		if r.Method != http.MethodHead || r.ContentLength > 0 {
			t.Errorf("request %s %s with %d bytes, want HEAD without a body", r.Method, r.URL, r.ContentLength)
		}
		if strings.HasPrefix(r.URL.Path, "/hook") && r.Header.Get(WebhookSignatureHeader) != "" {
			t.Errorf("webhook probe was signed: %s", r.Header.Get(WebhookSignatureHeader))
		}
	}
}

// WeCom's other credential error, with an errmsg that repeats the secret: the summary
// names the errcode and hides the secret.
func TestProbeWeComErrcode(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"errcode": 40013,
			"errmsg": "invalid corpid, corpsecret " + r.URL.Query().Get("corpsecret")})
	}))
	t.Cleanup(srv.Close)
	res := NewRegistry(nil).Probe(context.Background(), probeAccount("wecom", true,
		map[string]string{"corp_id": "ww-bad", "secret": probeWeComSecret, "agent_id": "1", "base_url": srv.URL}))
	checkProbe(t, res, false, []string{"WeCom refused the credentials: errcode 40013: invalid corpid, corpsecret ***"},
		[]string{"gettoken?corpid=ww-bad&corpsecret=*** → HTTP 200 OK, errcode 40013"})
}

// Failures to connect say which kind they are.
func TestProbeNetworkErrors(t *testing.T) {
	t.Parallel()
	closed := listenLoopback(t)
	closedPort := strconv.Itoa(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	closedURL := "http://127.0.0.1:" + closedPort
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)

	for _, tc := range []struct {
		name    string
		account Account
		summary []string
	}{
		{"refused", probeAccount("tianyuan", true, map[string]string{"base_url": closedURL, "token": probeToken}),
			[]string{"Could not reach the tianyuan endpoint: connection refused by 127.0.0.1:" + closedPort}},
		{"wecom refused", probeAccount("wecom", true, map[string]string{"corp_id": "c", "secret": probeWeComSecret, "agent_id": "1", "base_url": closedURL}),
			[]string{"Could not reach WeCom: connection refused"}},
		{"smtp refused", probeAccount("email", true, map[string]string{"host": "127.0.0.1", "port": closedPort, "from": "h@example.com"}),
			[]string{"Could not reach the SMTP server 127.0.0.1:" + closedPort + ": connection refused"}},
		{"tls", probeAccount("webhook", true, map[string]string{"url": untrusted.URL + "/hook"}),
			[]string{"Could not reach the webhook receiver: TLS failed", "certificate"}},
		{"dns", probeAccount("webhook", true, map[string]string{"url": "https://herald-probe.invalid/hook"}),
			[]string{"DNS lookup of herald-probe.invalid failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res := NewRegistry(nil).Probe(ctx, tc.account)
			checkProbe(t, res, false, tc.summary, []string{"error: "})
		})
	}
}

// The caller's context bounds a probe of a server that accepts and says nothing.
func TestProbeSilentServer(t *testing.T) {
	t.Parallel()
	port := silentServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), shortDeadline)
	defer cancel()
	start := time.Now()
	res := NewRegistry(nil).Probe(ctx, probeAccount("email", true, map[string]string{"host": "127.0.0.1", "port": port, "from": "h@example.com"}))
	checkProbe(t, res, false, []string{"no answer in time"}, []string{"connect 127.0.0.1:" + port})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Probe took %s despite a %s deadline", took, shortDeadline)
	}
}

// With implicit TLS the greeting is read over TLS and the password sent, both by a
// probe and by a send; a certificate the account does not trust stops both before AUTH.
func TestEmailImplicitTLS(t *testing.T) {
	t.Parallel()
	certSrv := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate, valid for example.com
	t.Cleanup(certSrv.Close)
	sim := simulator.NewWithOptions(simulator.Faults{}, simulator.Options{Seed: 7})
	ln := listenLoopback(t)
	done := make(chan error, 1)
	go func() {
		done <- sim.ServeSMTP(tls.NewListener(ln, &tls.Config{Certificates: certSrv.TLS.Certificates}))
	}()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeSMTP: %v", err)
		}
	})
	trusted := x509.NewCertPool()
	trusted.AddCert(certSrv.Certificate())

	newTLSEmail := func(roots *x509.CertPool) *Email {
		// A host that is not localhost, so net/smtp sends the password only over TLS.
		e := newEmail(map[string]string{"host": "example.com", "port": "465", "tls": "implicit",
			"from": "herald@example.com", "username": "herald", "password": probePassword}, true)
		e.roots = roots
		dial := DialContext(true)
		e.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial(ctx, network, ln.Addr().String())
		}
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	e := newTLSEmail(trusted)
	res := e.Probe(ctx)
	res.Took = time.Millisecond
	checkProbe(t, res, true, []string{"accepted the login of herald"},
		[]string{"TLS handshake → TLS 1.3", "greeting → 220 herald-sim ESMTP ready", "AUTH PLAIN as herald → 235", "QUIT → 221"})
	checkNothingSent(t, sim)
	m := newMessage("a@example.com")
	if _, err := e.Send(ctx, m); err != nil {
		t.Fatalf("Send over implicit TLS: %v", err)
	}
	if d := sim.Deliveries(); len(d) != 1 || d[0].RequestID != m.ID {
		t.Errorf("deliveries = %+v, want %s", d, m.ID)
	}

	res = newTLSEmail(nil).Probe(ctx)
	res.Took = time.Millisecond
	checkProbe(t, res, false, []string{"TLS failed", "certificate"}, []string{"error: transient: channels: email: TLS handshake"})
}

// With tls none, a probe meets what a send would: the password is not sent in clear to
// a host other than localhost.
func TestProbeEmailPasswordNotSentInClear(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	e := newEmail(map[string]string{"host": "mail.example.com", "from": "herald@example.com",
		"username": "herald", "password": probePassword, "tls": "none"}, true)
	dial := DialContext(true)
	e.dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, net.JoinHostPort(rig.smtpHost, rig.smtpPort))
	}
	res := e.Probe(context.Background())
	res.Took = time.Millisecond
	checkProbe(t, res, false, []string{"SMTP login to mail.example.com:587 not attempted: unencrypted connection"},
		[]string{"EHLO localhost → 250", "error: auth: channels: email: AUTH: unencrypted connection"})
	checkNothingSent(t, rig.sim)
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww1&corpsecret=abc": "https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww1&corpsecret=***",
		"https://hooks.example.com/send?key=abc&room=ops&Access_Token=x":         "https://hooks.example.com/send?key=***&room=ops&Access_Token=***",
		"https://im.example.com/messages":                                        "https://im.example.com/messages",
		"https://im.example.com/x?%zz=1":                                         "https://im.example.com/x?%zz=***",
		"http://%zz":                                                             "(unreadable URL)",
	} {
		if got := redactURL(raw); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}
