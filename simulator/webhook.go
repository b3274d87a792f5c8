package simulator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// webhookRequest is the body Herald posts to a webhook; unknown fields are allowed.
type webhookRequest struct {
	RequestID string `json:"request_id"`
	To        string `json:"to"`
	MsgType   string `json:"msg_type"`
	Title     string `json:"title"`
	Content   string `json:"content"`
}

// webhookReply is every webhook answer.
type webhookReply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// signatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
const signatureHeader = "X-Herald-Signature"

// signatureTolerance is how far a signature's timestamp may be from now. Checking it
// catches a sender that signs in milliseconds, or reuses an old signature.
const signatureTolerance = 5 * time.Minute

// handleWebhook serves POST /webhook/...
func (s *Simulator) handleWebhook(w http.ResponseWriter, r *http.Request) {
	received := s.now()
	fail := func(status int, msg string) {
		writeJSON(w, status, webhookReply{Error: msg})
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			fail(http.StatusRequestEntityTooLarge, "body too large")
		} else {
			fail(http.StatusBadRequest, "reading body: "+err.Error())
		}
		return
	}
	if secret := s.opts.WebhookSecret; secret != "" {
		if err := verifySignature(r.Header.Get(signatureHeader), body, secret, received); err != nil {
			fail(http.StatusUnauthorized, err.Error())
			return
		}
	}
	var req webhookRequest
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}

	v := s.decide()
	waitLatency(r, v)
	delivery := Delivery{
		Platform:     "webhook",
		To:           req.To,
		RequestID:    req.RequestID,
		Content:      req.Content,
		ReceivedAtMs: received.UnixMilli(),
	}
	switch v.outcome {
	case outcomeAuth:
		fail(http.StatusUnauthorized, "authentication failed")
	case outcomeFail:
		fail(http.StatusInternalServerError, "internal error")
	case outcomeThrottle:
		w.Header().Set("Retry-After", "1")
		fail(http.StatusTooManyRequests, "rate limited")
	case outcomeReject:
		fail(http.StatusBadRequest, "rejected")
	case outcomeTimeout:
		s.holdThenAbort(r)
	case outcomeAcceptThenTimeout:
		s.record(delivery)
		s.holdThenAbort(r)
	default:
		s.record(delivery)
		writeJSON(w, http.StatusOK, webhookReply{OK: true})
	}
}

// verifySignature checks a signature header against body. Several v1 values may be
// given, as during a secret rotation; one match is enough.
func verifySignature(header string, body []byte, secret string, now time.Time) error {
	if header == "" {
		return errors.New("missing " + signatureHeader)
	}
	var timestamp string
	var signatures [][]byte
	for part := range strings.SplitSeq(header, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "t":
			timestamp = value
		case "v1":
			if sig, err := hex.DecodeString(value); err == nil {
				signatures = append(signatures, sig)
			}
		}
	}
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return errors.New(signatureHeader + ": t must be unix seconds")
	}
	if age := now.Sub(time.Unix(seconds, 0)); age > signatureTolerance || age < -signatureTolerance {
		return errors.New(signatureHeader + ": timestamp too far from now")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range signatures {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return errors.New(signatureHeader + ": signature mismatch")
}
