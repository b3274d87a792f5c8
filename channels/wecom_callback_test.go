package channels

import (
	"errors"
	"strings"
	"testing"
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
