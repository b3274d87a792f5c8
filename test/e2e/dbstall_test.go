package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
)

// stallProxy forwards TCP connections to a server and can stop forwarding without
// closing anything, which is what a paused database looks like from Herald's side:
// connections stay open, and nothing answers.
type stallProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	paused bool
	resume chan struct{}
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, resume: make(chan struct{})}
	t.Cleanup(func() { p.unpause(); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *stallProxy) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
}

// copy forwards bytes, holding each chunk while the proxy is paused.
func (p *stallProxy) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) wait() {
	p.mu.Lock()
	paused, resume := p.paused, p.resume
	p.mu.Unlock()
	if paused {
		<-resume
	}
}

func (p *stallProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused, p.resume = true, make(chan struct{})
	}
}

func (p *stallProxy) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resume)
	}
}

// TestDatabaseStallAnswers503 stalls MySQL under a running Herald (a proxy between them
// stops forwarding): API calls answer 503 database_unavailable with Retry-After within
// 5 s instead of hanging, /readyz turns 503, the console shows its error page, and once
// the database answers again every accepted message is delivered.
func TestDatabaseStallAnswers503(t *testing.T) {
	env := testEnv(t)
	if env["HERALD_MYSQL_DSN"] == "" {
		t.Skip("needs HERALD_TEST_MYSQL_DSN")
	}
	cfg, err := mysqldriver.ParseDSN(env["HERALD_MYSQL_DSN"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, cfg.Addr)
	cfg.Addr = proxy.ln.Addr().String()
	env["HERALD_MYSQL_DSN"] = cfg.FormatDSN()
	h := startHerald(t, env)
	api := newAPIKey(t, h, "send,read")
	console := newBrowser(t, h.URL)
	console.Login("admin", testAdminPassword)
	send := func(text string) (*http.Response, string, time.Duration) {
		req, _ := http.NewRequest("POST", h.URL+"/api/v1/messages",
			strings.NewReader(`{"platform":"sandbox","recipients":["E2001"],"content":{"text":"`+text+`"}}`))
		req.Header.Set("Authorization", "Bearer "+api.Key)
		req.Header.Set("Content-Type", "application/json")
		started := time.Now()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Errorf("POST /api/v1/messages: %v", err)
			return nil, "", time.Since(started)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body), time.Since(started)
	}
	var accepted []string
	if resp, body, _ := send("before the stall"); resp == nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("before the stall: %v %s", resp, body)
	} else {
		accepted = append(accepted, idsIn(body)...)
	}

	proxy.pause()
	stalled := time.Now()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 2 * time.Second) // some early in the stall, some late
			resp, body, took := send("during the stall")
			if resp == nil {
				return
			}
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"database_unavailable"`) ||
				resp.Header.Get("Retry-After") == "" {
				t.Errorf("API call during the stall: %s, Retry-After %q, %s; want 503 database_unavailable with Retry-After",
					resp.Status, resp.Header.Get("Retry-After"), body)
			}
			if took > 5*time.Second {
				t.Errorf("API call during the stall answered after %s, want within 5 s", took.Round(time.Millisecond))
			}
			t.Logf("API call %d during the stall: %s in %s", i+1, resp.Status, took.Round(time.Millisecond))
		}()
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(h.URL + "/readyz")
	if err != nil {
		t.Errorf("/readyz during the stall: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/readyz during the stall: %s, want 503", resp.Status)
		}
	}
	if resp, body := console.Get("/messages"); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "database is not answering") {
		t.Errorf("console page during the stall: %s, want the 503 error page; got %.300s", resp.Status, body)
	}
	wg.Wait()
	t.Logf("database stalled for %s", time.Since(stalled).Round(time.Millisecond))
	proxy.unpause()

	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body, _ := send("after the stall")
		if resp != nil && resp.StatusCode == http.StatusAccepted {
			accepted = append(accepted, idsIn(body)...)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the stall the API still answers %v %s", resp, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitDelivered(t, h, accepted, time.Minute)
}

// idsIn returns the message ids of an accepted API answer.
func idsIn(body string) []string {
	var out struct {
		Messages []struct{ ID string } `json:"messages"`
	}
	_ = json.Unmarshal([]byte(body), &out)
	var ids []string
	for _, m := range out.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}
