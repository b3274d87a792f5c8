package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/simulator"
)

// WeCom's published sample of callback encryption (the WXBizMsgCrypt samples in every
// language use these values).
var wecomSample = map[string]string{
	"callback_token":   "QDG6eK",
	"encoding_aes_key": "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C",
	"corp_id":          "wx5823bf96d3bd56c7",
}

const (
	wecomSampleEcho = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	wecomSampleBody = "<xml><ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName><Encrypt><![CDATA[RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q==]]></Encrypt><AgentID><![CDATA[218]]></AgentID></xml>"
)

func sampleCallback(t *testing.T) *WeComCallback {
	t.Helper()
	c, err := NewWeComCallback(wecomSample)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWeComCallbackPublishedURLCheck(t *testing.T) {
	c := sampleCallback(t)
	echo, err := c.VerifyURL("5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3", "1409659589", "263014780", wecomSampleEcho)
	if err != nil {
		t.Fatal(err)
	}
	if echo != "1616140317555161061" {
		t.Errorf("echostr decrypts to %q, want 1616140317555161061", echo)
	}
}

func TestWeComCallbackPublishedMessage(t *testing.T) {
	c := sampleCallback(t)
	msg, err := c.Open("477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623149", []byte(wecomSampleBody))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<FromUserName><![CDATA[mycreate]]></FromUserName>", "<Content><![CDATA[hello]]></Content>"} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("decrypted message lacks %s:\n%s", want, msg)
		}
	}
	// A text message is no card click: nothing to act on.
	if _, ok, err := ParseWeComCardEvent(msg); ok || err != nil {
		t.Errorf("ParseWeComCardEvent(text message) = ok %v, err %v; want ignored", ok, err)
	}
}

func TestWeComCallbackRefusesWhatWeComDidNotSign(t *testing.T) {
	c := sampleCallback(t)
	tests := []struct {
		name                        string
		signature, timestamp, nonce string
		body                        string
	}{
		{"altered signature", "477715d11cdb4164915debcba66cb864d751f3e7", "1409659813", "1372623149", wecomSampleBody},
		{"altered timestamp", "477715d11cdb4164915debcba66cb864d751f3e6", "1409659814", "1372623149", wecomSampleBody},
		{"altered nonce", "477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623148", wecomSampleBody},
		{"altered ciphertext", "477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623149", strings.Replace(wecomSampleBody, "RypEv", "RypEw", 1)},
		{"no signature", "", "1409659813", "1372623149", wecomSampleBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := c.Open(tt.signature, tt.timestamp, tt.nonce, []byte(tt.body)); !errors.Is(err, ErrWeComSignature) {
				t.Errorf("Open = %v, want ErrWeComSignature", err)
			}
		})
	}
	// Signed with the right token but for another corp: the plaintext names the wrong
	// receiver.
	other := map[string]string{"callback_token": "QDG6eK", "encoding_aes_key": wecomSample["encoding_aes_key"], "corp_id": "another-corp"}
	oc, err := NewWeComCallback(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oc.VerifyURL("5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3", "1409659589", "263014780", wecomSampleEcho); err == nil {
		t.Error("a message for another corp id opened")
	}
}

func TestWeComCallbackSettings(t *testing.T) {
	base := map[string]string{"corp_id": "ww1", "agent_id": "1000002", "secret": "s"}
	with := func(kv ...string) map[string]string {
		cfg := map[string]string{}
		for k, v := range base {
			cfg[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			cfg[kv[i]] = kv[i+1]
		}
		return cfg
	}
	tests := []struct {
		name      string
		cfg       map[string]string
		wantField string
	}{
		{"neither", with(), ""},
		{"both", with("callback_token", "QDG6eK", "encoding_aes_key", wecomSample["encoding_aes_key"]), ""},
		{"token alone", with("callback_token", "QDG6eK"), "config.encoding_aes_key"},
		{"key alone", with("encoding_aes_key", wecomSample["encoding_aes_key"]), "config.callback_token"},
		{"short key", with("callback_token", "QDG6eK", "encoding_aes_key", "abc"), "config.encoding_aes_key"},
		{"key not base64", with("callback_token", "QDG6eK", "encoding_aes_key", strings.Repeat("!", 43)), "config.encoding_aes_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateConfig("wecom", tt.cfg, false)
			var se *SettingError
			switch {
			case tt.wantField == "" && err != nil:
				t.Errorf("ValidateConfig = %v, want nil", err)
			case tt.wantField != "" && (!errors.As(err, &se) || se.Field != tt.wantField):
				t.Errorf("ValidateConfig = %v, want a problem with %s", err, tt.wantField)
			}
		})
	}
	if _, err := NewWeComCallback(base); !errors.Is(err, ErrWeComCallbackOff) {
		t.Errorf("NewWeComCallback without settings = %v, want ErrWeComCallbackOff", err)
	}
}

// An alert notice goes to WeCom as a button card; a click on it comes back through the
// simulator, signed and encrypted as WeCom does, and opens with the account's
// settings into the click's user, button and task id.
func TestWeComCardClickRoundTrip(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	cfg := wecomConfig(rig)
	cfg["callback_token"], cfg["encoding_aes_key"] = "cb-token", wecomSample["encoding_aes_key"]
	cb, err := NewWeComCallback(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clicks := make(chan WeComCardEvent, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method == http.MethodGet {
			echo, err := cb.VerifyURL(q.Get("msg_signature"), q.Get("timestamp"), q.Get("nonce"), q.Get("echostr"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			io.WriteString(w, echo)
			return
		}
		body, _ := io.ReadAll(r.Body)
		msg, err := cb.Open(q.Get("msg_signature"), q.Get("timestamp"), q.Get("nonce"), body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		ev, ok, err := ParseWeComCardEvent(msg)
		if !ok || err != nil {
			http.Error(w, fmt.Sprintf("not a card click: %v", err), http.StatusBadRequest)
			return
		}
		clicks <- ev
	}))
	t.Cleanup(receiver.Close)

	w, err := NewWeCom(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	m := Message{ID: "0193a5c2-7d4e-7b3a-9c1d-2f4e6a8b0c1d", To: "zhangsan", MsgType: "text", Title: "核心系统告警",
		Content: "交易成功率低于 95%", Actions: AlertActions()}
	if _, err := w.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	ds := rig.sim.Deliveries()
	if len(ds) != 1 || ds[0].Card == nil {
		t.Fatalf("simulator recorded %+v, want one card", ds)
	}
	wantCard := &simulator.Card{CardType: "button_interaction", TaskID: m.ID,
		Buttons: []simulator.CardButton{{Text: "我来处理", Key: "ack"}, {Text: "已解决", Key: "resolve"}}}
	if diff := cmp.Diff(wantCard, ds[0].Card); diff != "" {
		t.Errorf("card mismatch (-want +got):\n%s", diff)
	}
	if ds[0].Content != "核心系统告警\n\n交易成功率低于 95%" {
		t.Errorf("card text = %q", ds[0].Content)
	}
	// The same task id again is refused, as WeCom refuses it.
	if _, err := w.Send(context.Background(), m); err == nil {
		t.Error("a second card with the same task id was accepted")
	}

	post := func(path string, v any) (int, string) {
		b, _ := json.Marshal(v)
		resp, err := http.Post(rig.url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	// A wrong token fails WeCom's URL check and is not kept.
	if status, body := post("/_sim/wecom/callback", map[string]string{"url": receiver.URL, "token": "wrong",
		"encoding_aes_key": cfg["encoding_aes_key"], "corp_id": cfg["corp_id"]}); status != http.StatusBadGateway {
		t.Errorf("callback with a wrong token: %d %s, want 502", status, body)
	}
	if status, body := post("/_sim/wecom/callback", map[string]string{"url": receiver.URL, "token": "cb-token",
		"encoding_aes_key": cfg["encoding_aes_key"], "corp_id": cfg["corp_id"]}); status != http.StatusNoContent {
		t.Fatalf("callback: %d %s", status, body)
	}
	if status, body := post("/_sim/wecom/click", map[string]string{"task_id": m.ID, "key": "ack"}); status != http.StatusOK || !strings.Contains(body, `"status":200`) {
		t.Fatalf("click: %d %s", status, body)
	}
	select {
	case ev := <-clicks:
		if diff := cmp.Diff(WeComCardEvent{UserID: "zhangsan", Key: "ack", TaskID: m.ID}, ev); diff != "" {
			t.Errorf("click mismatch (-want +got):\n%s", diff)
		}
	default:
		t.Fatal("the receiver heard no click")
	}
	if status, _ := post("/_sim/wecom/click", map[string]string{"task_id": m.ID, "key": "ack", "userid": "lisi"}); status != http.StatusBadRequest {
		t.Errorf("a click by someone else: %d, want 400", status)
	}
}
