package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sign builds an X-Herald-Signature value as a sender does.
func sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	body := []byte(`{"request_id":"m-9","to":"ops","msg_type":"text","title":"T","content":"disk full","extra":{"a":1}}`)
	delivered := []Delivery{{Platform: "webhook", To: "ops", RequestID: "m-9", Content: "disk full", ReceivedAtMs: testStart.UnixMilli()}}
	const secret = "s3cret"
	signed := http.Header{signatureHeader: {sign(secret, testStart, body)}}

	tests := []struct {
		name           string
		secret         string
		faults         Faults
		header         http.Header
		body           []byte
		wantStatus     int
		wantRetryAfter string
		wantDeliveries []Delivery
	}{
		{name: "unsigned without secret", body: body, wantStatus: 200, wantDeliveries: delivered},
		{name: "signed with secret", secret: secret, header: signed, body: body, wantStatus: 200, wantDeliveries: delivered},
		{name: "rotated secret: second v1 matches", secret: secret,
			header: http.Header{signatureHeader: {sign(secret, testStart, body) + ",v1=" + hex.EncodeToString(make([]byte, 32))}},
			body:   body, wantStatus: 200, wantDeliveries: delivered},
		{name: "missing signature", secret: secret, body: body, wantStatus: 401},
		{name: "wrong secret", secret: secret, header: http.Header{signatureHeader: {sign("other", testStart, body)}}, body: body, wantStatus: 401},
		{name: "body changed after signing", secret: secret, header: signed, body: append([]byte(" "), body...), wantStatus: 401},
		{name: "stale timestamp", secret: secret, header: http.Header{signatureHeader: {sign(secret, testStart.Add(-6*time.Minute), body)}}, body: body, wantStatus: 401},
		{name: "timestamp in milliseconds", secret: secret,
			header: http.Header{signatureHeader: {"t=" + strconv.FormatInt(testStart.UnixMilli(), 10) + ",v1=00"}}, body: body, wantStatus: 401},
		{name: "bad JSON", body: []byte("{"), wantStatus: 400},
		{name: "fail fault", faults: Faults{FailRate: 1}, body: body, wantStatus: 500},
		{name: "throttle fault", faults: Faults{ThrottleRate: 1}, body: body, wantStatus: 429, wantRetryAfter: "1"},
		{name: "reject fault", faults: Faults{RejectRate: 1}, body: body, wantStatus: 400},
		{name: "auth fault", faults: Faults{AuthFail: true}, body: body, wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, srv := newTestServer(t, tt.faults, Options{WebhookSecret: tt.secret})
			resp := mustDo(t, "POST", srv.URL+"/webhook/team/ops", tt.header, tt.body)
			if resp.status != tt.wantStatus || resp.retryAfter != tt.wantRetryAfter {
				t.Errorf("status %d, Retry-After %q; want %d, %q (body %s)",
					resp.status, resp.retryAfter, tt.wantStatus, tt.wantRetryAfter, resp.body)
			}
			reply := decode[webhookReply](t, resp.body)
			if reply.OK != (tt.wantStatus == 200) {
				t.Errorf("ok = %v with status %d", reply.OK, resp.status)
			}
			if diff := cmp.Diff(tt.wantDeliveries, sim.Deliveries(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
		})
	}
}
