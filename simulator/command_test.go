package simulator

import (
	"bytes"
	"context"
	"net/http"
	"net/textproto"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRunCommandFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--fail-rate", "1.5"}, "simulate: --fail-rate must be between 0 and 1, got 1.5"},
		{[]string{"--accept-then-timeout-rate=-0.1"}, "simulate: --accept-then-timeout-rate must be between 0 and 1, got -0.1"},
		{[]string{"--fail-rate=0.6", "--reject-rate=0.5"},
			"simulate: --fail-rate + --timeout-rate + --throttle-rate + --reject-rate + --accept-then-timeout-rate add up to 1.1, more than 1"},
		{[]string{"--latency=-5ms"}, "simulate: --latency must not be negative, got -5ms"},
		{[]string{"--wecom-token-ttl=0s"}, "simulate: --wecom-token-ttl must be positive, got 0s"},
		{[]string{"--throttle-rate=lots"}, `simulate: invalid value "lots" for flag -throttle-rate`},
		{[]string{"--seed=x"}, `simulate: invalid value "x" for flag -seed`},
		{[]string{"--no-such-flag"}, "simulate: flag provided but not defined: -no-such-flag"},
		{[]string{"--addr=127.0.0.1:0", "extra"}, `simulate: unexpected argument "extra"`},
		{[]string{"--addr=127.0.0.1:99999", "--smtp-addr=127.0.0.1:0"}, "simulate: --addr: listen tcp"},
		{[]string{"--addr=127.0.0.1:0", "--smtp-addr=nowhere"}, "simulate: --smtp-addr: listen tcp"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		err := RunCommand(context.Background(), tt.args, &out)
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("RunCommand(%q) = %v, want an error starting %q", tt.args, err, tt.wantErr)
		}
		if out.Len() != 0 {
			t.Errorf("RunCommand(%q) printed %q on failure", tt.args, out.String())
		}
	}
}

func TestRunCommandHelp(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := RunCommand(context.Background(), []string{"-h"}, &out); err != nil {
		t.Fatalf("RunCommand(-h) = %v, want nil", err)
	}
	for _, flag := range []string{"-addr", "-smtp-addr", "-accept-then-timeout-rate", "-webhook-secret", "-wecom-token-ttl", "-seed"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("usage does not mention %s:\n%s", flag, out.String())
		}
	}
}

// lineWriter hands each write to the test, which reads it from a channel.
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// The command serves both protocols with the flags' faults and, when its context ends,
// returns promptly even while a request is being held by a timeout fault.
func TestRunCommandServesAndStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 1)
	done := make(chan error, 1)
	go func() {
		done <- RunCommand(ctx, []string{
			"--addr=127.0.0.1:0", "--smtp-addr=127.0.0.1:0", "--seed=1", "--timeout-rate=1", "--webhook-secret=k",
		}, out)
	}()

	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("RunCommand returned early: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no start-up line within 5s")
	}
	m := regexp.MustCompile(`^herald simulate: HTTP on (http://\S+), SMTP on (\S+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start-up line %q does not say where it listens", line)
	}
	httpURL, smtpAddr := m[1], m[2]

	if resp := mustDo(t, "GET", httpURL+"/healthz", nil, nil); resp.status != 200 {
		t.Errorf("healthz status %d", resp.status)
	}
	// --webhook-secret reached the handler: an unsigned webhook is refused.
	if resp := mustDo(t, "POST", httpURL+"/webhook/x", nil, []byte(`{}`)); resp.status != http.StatusUnauthorized {
		t.Errorf("unsigned webhook status %d, want 401", resp.status)
	}
	smtpConn, err := textproto.Dial("tcp", smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer smtpConn.Close()
	if _, _, err := smtpConn.ReadResponse(220); err != nil {
		t.Errorf("SMTP greeting: %v", err)
	}

	// --timeout-rate=1: this request is held until the command stops.
	held := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", httpURL+"/tianyuan/messages", strings.NewReader(`{"to":"E1","request_id":"r"}`))
		req.Header.Set("Authorization", "Bearer x")
		resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); ; {
		stats := decode[Stats](t, mustDo(t, "GET", httpURL+"/_sim/stats", nil, nil).body)
		if stats.Faults.Timeout == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("held request never reached the simulator: %+v", stats)
		}
		time.Sleep(5 * time.Millisecond)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunCommand = %v after cancel, want nil", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("RunCommand still running 3s after its context was cancelled")
	}
	select {
	case err := <-held:
		if err == nil {
			t.Error("held request got an answer; a timeout fault must never answer")
		}
	case <-time.After(3 * time.Second):
		t.Error("held request still waiting after the command stopped")
	}
}
