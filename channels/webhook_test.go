package channels

import (
	"context"
	"testing"
	"time"

	"herald/simulator"
)

func TestWebhookFaults(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{})
	w, err := NewWebhook(map[string]string{"url": rig.url + "/webhook/herald"}, true)
	if err != nil {
		t.Fatal(err)
	}
	runFaultTable(t, rig, adapterCase{platform: "webhook", sender: w, to: "ops-room", retryAfter: true})
}

func TestWebhookSignature(t *testing.T) {
	t.Parallel()
	rig := startSim(t, simulator.Options{WebhookSecret: "s3cret"})
	for _, tc := range []struct {
		secret string
		want   Class // "" means delivered
	}{
		{"s3cret", ""},
		{"wrong", Auth},
		{"", Auth}, // unsigned
	} {
		cfg := map[string]string{"url": rig.url + "/webhook/signed"}
		if tc.secret != "" {
			cfg["secret"] = tc.secret
		}
		w, err := NewWebhook(cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Send(context.Background(), newMessage("ops"))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("secret %q: %v, want delivered", tc.secret, err)
		case tc.want != "" && classOf(t, err) != tc.want:
			t.Errorf("secret %q: %v, want %s", tc.secret, err, tc.want)
		}
	}
	if n := len(rig.sim.Deliveries()); n != 1 {
		t.Errorf("deliveries = %d, want 1 (the correctly signed one)", n)
	}
}

func TestSignWebhook(t *testing.T) {
	// HMAC-SHA256(key "k", "1700000000.{}"), computed with another implementation.
	got := SignWebhook("k", time.Unix(1700000000, 0), []byte("{}"))
	const want = "t=1700000000,v1=c6ef4734033cee2367414a0939385eca0397754aa7a59716da7463a9298b5146"
	if got != want {
		t.Errorf("SignWebhook = %q, want %q", got, want)
	}
}

func TestWebhookReplyID(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":"abc"}`: "abc", `{"id":42}`: "42", `{"ok":true}`: "", `not json`: "", ``: "",
	} {
		if got := webhookReplyID([]byte(body)); got != want {
			t.Errorf("webhookReplyID(%q) = %q, want %q", body, got, want)
		}
	}
}
