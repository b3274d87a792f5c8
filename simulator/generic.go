package simulator

import (
	"encoding/json"
	"net/http"
	"strings"
)

// genericRequest is the body of the generic JSON contract (Tianyuan, Zhaohu).
type genericRequest struct {
	To        string `json:"to"`
	MsgType   string `json:"msg_type"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	RequestID string `json:"request_id"`
}

// genericReply is every answer of the generic contract; Code 0 means success.
type genericReply struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	MsgID   string `json:"msg_id,omitempty"`
}

// Codes of the generic contract: 429xx rate limited, 401xx auth, 400xx permanent.
const (
	codeOK              = 0
	codeBadRequest      = 40001
	codeInvalidReceiver = 40002
	codeInvalidToken    = 40101
	codeRateLimited429  = 42900
	codeRateLimited     = 42901
	codeInternal        = 50000
)

// handleGeneric serves POST /{platform}/messages of the generic JSON contract.
func (s *Simulator) handleGeneric(platform string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		received := s.now()
		if bearerToken(r) == "" {
			writeJSON(w, http.StatusUnauthorized, genericReply{Code: codeInvalidToken, Message: "invalid token"})
			return
		}
		var req genericRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, genericReply{Code: codeBadRequest, Message: "invalid JSON body: " + err.Error()})
			return
		}
		if req.To == "" || req.RequestID == "" {
			writeJSON(w, http.StatusBadRequest, genericReply{Code: codeBadRequest, Message: "to and request_id are required"})
			return
		}

		v := s.decide()
		waitLatency(r, v)
		delivery := Delivery{
			Platform:     platform,
			To:           req.To,
			RequestID:    req.RequestID,
			Content:      req.Content,
			ReceivedAtMs: received.UnixMilli(),
		}
		switch v.outcome {
		case outcomeAuth:
			writeJSON(w, http.StatusOK, genericReply{Code: codeInvalidToken, Message: "invalid token"})
		case outcomeFail:
			writeJSON(w, http.StatusInternalServerError, genericReply{Code: codeInternal, Message: "internal error"})
		case outcomeThrottle:
			w.Header().Set("Retry-After", "1")
			if v.throttleAs429 {
				writeJSON(w, http.StatusTooManyRequests, genericReply{Code: codeRateLimited429, Message: "too many requests"})
			} else {
				writeJSON(w, http.StatusOK, genericReply{Code: codeRateLimited, Message: "rate limited"})
			}
		case outcomeReject:
			writeJSON(w, http.StatusOK, genericReply{Code: codeInvalidReceiver, Message: "invalid recipient"})
		case outcomeTimeout:
			s.holdThenAbort(r)
		case outcomeAcceptThenTimeout:
			s.record(delivery)
			s.holdThenAbort(r)
		default:
			s.record(delivery)
			writeJSON(w, http.StatusOK, genericReply{Code: codeOK, Message: "ok", MsgID: s.newMsgID()})
		}
	}
}

// bearerToken returns the token of an "Authorization: Bearer" header, or "" if there is
// none. The scheme is matched case-insensitively, as RFC 9110 asks.
func bearerToken(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
