package dispatch_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"herald/alert"
	"herald/audit"
	"herald/channels"
	"herald/dispatch"
	"herald/internal/testenv"
	"herald/sending"
)

// weComCallbackKey is an EncodingAESKey as WeCom's admin console generates them.
const weComCallbackKey = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"

// weComEncrypt encrypts a message as WeCom does for corpID (see channels.WeComCallback).
func weComEncrypt(t *testing.T, msg, corpID string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(weComCallbackKey + "=")
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	plain.Write(make([]byte, 16))
	_ = binary.Write(&plain, binary.BigEndian, uint32(len(msg)))
	plain.WriteString(msg + corpID)
	pad := 32 - plain.Len()%32
	plain.Write(bytes.Repeat([]byte{byte(pad)}, pad))
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, plain.Len())
	cipher.NewCBCEncrypter(block, key[:aes.BlockSize]).CryptBlocks(out, plain.Bytes())
	return base64.StdEncoding.EncodeToString(out)
}

// A WeCom callback is taken once, from WeCom, now: a signed request whose timestamp is
// more than five minutes off is refused, so is the same signed request a second time
// (also through another dispatcher on the same database: a second web process), and
// every refusal (no such account, a bad signature, an old or replayed request) is the
// same error, which the handler answers alike.
func TestWeComCallbackRefusesOldAndReplayedRequests(t *testing.T) {
	t.Parallel()
	store := testenv.Store(t)
	ctx := context.Background()
	const corpID, token = "ww-cb-test", "cb-token"
	if err := store.Sending().SaveAccount(ctx, &sending.Account{Name: "wecom-cb", Platform: "wecom", Enabled: true, MaxAttempts: 3,
		Config: map[string]string{"corp_id": corpID, "agent_id": "1000002", "secret": "s3cret",
			"callback_token": token, "encoding_aes_key": weComCallbackKey}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	newDispatcher := func() *dispatch.Dispatcher {
		d, err := dispatch.NewDispatcher(dispatch.Config{Store: store, Enqueuer: testenv.Enqueuer(t), Location: time.UTC,
			Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	web1, web2 := newDispatcher(), newDispatcher()
	check := func(at time.Time, nonce string) alert.WeComCallbackRequest {
		echo := weComEncrypt(t, "echo-"+nonce, corpID)
		ts := strconv.FormatInt(at.Unix(), 10)
		return alert.WeComCallbackRequest{Account: "wecom-cb", Check: true, Timestamp: ts, Nonce: nonce, Echostr: echo,
			Signature: channels.WeComSignature(token, ts, nonce, echo)}
	}
	by := audit.System(alert.ActorWeComCard)

	fresh := check(now.Add(-time.Minute), "n1")
	if echo, err := web1.Alerts().WeComCallback(ctx, by, fresh); err != nil || echo != "echo-n1" {
		t.Fatalf("a fresh, signed URL check: %q, %v", echo, err)
	}
	for i, d := range []*dispatch.Dispatcher{web1, web2, web2} {
		if _, err := d.Alerts().WeComCallback(ctx, by, fresh); !errors.Is(err, alert.ErrWeComCallbackRefused) {
			t.Errorf("replay %d: %v, want ErrWeComCallbackRefused", i+1, err)
		}
	}
	old := check(time.Date(2001, 9, 9, 9, 0, 0, 0, time.UTC), "n2")
	ahead := check(now.Add(6*time.Minute), "n3")
	forged := check(now, "n4")
	forged.Signature = channels.WeComSignature("not-the-token", forged.Timestamp, forged.Nonce, forged.Echostr)
	unknown := check(now, "n5")
	unknown.Account = "nobody"
	for name, req := range map[string]alert.WeComCallbackRequest{"signed in 2001": old, "six minutes ahead": ahead,
		"a bad signature": forged, "an unknown account": unknown} {
		if _, err := web2.Alerts().WeComCallback(ctx, by, req); !errors.Is(err, alert.ErrWeComCallbackRefused) {
			t.Errorf("%s: %v, want ErrWeComCallbackRefused", name, err)
		}
	}
	if echo, err := web2.Alerts().WeComCallback(ctx, by, check(now.Add(4*time.Minute), "n6")); err != nil || echo != "echo-n6" {
		t.Errorf("a check four minutes ahead, within the window: %q, %v", echo, err)
	}
}
