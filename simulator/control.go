package simulator

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// controlError is the body of a refused control request.
type controlError struct {
	Error string `json:"error"`
}

// handleListDeliveries serves GET /_sim/deliveries.
func (s *Simulator) handleListDeliveries(w http.ResponseWriter, r *http.Request) {
	// Deliveries never returns nil, so an empty record encodes as [] rather than null.
	writeJSON(w, http.StatusOK, s.Deliveries())
}

// handleResetDeliveries serves DELETE /_sim/deliveries.
func (s *Simulator) handleResetDeliveries(w http.ResponseWriter, r *http.Request) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

// handleStats serves GET /_sim/stats.
func (s *Simulator) handleStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

// handleGetFaults serves GET /_sim/faults.
func (s *Simulator) handleGetFaults(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Faults())
}

// faultsPatch is a partial update of Faults: nil fields stay as they are.
type faultsPatch struct {
	Latency               *Duration `json:"latency"`
	FailRate              *float64  `json:"fail_rate"`
	TimeoutRate           *float64  `json:"timeout_rate"`
	ThrottleRate          *float64  `json:"throttle_rate"`
	RejectRate            *float64  `json:"reject_rate"`
	AcceptThenTimeoutRate *float64  `json:"accept_then_timeout_rate"`
	AuthFail              *bool     `json:"auth_fail"`
}

// applyTo copies the fields present in p onto f.
func (p faultsPatch) applyTo(f *Faults) {
	set := func(dst *float64, src *float64) {
		if src != nil {
			*dst = *src
		}
	}
	if p.Latency != nil {
		f.Latency = *p.Latency
	}
	set(&f.FailRate, p.FailRate)
	set(&f.TimeoutRate, p.TimeoutRate)
	set(&f.ThrottleRate, p.ThrottleRate)
	set(&f.RejectRate, p.RejectRate)
	set(&f.AcceptThenTimeoutRate, p.AcceptThenTimeoutRate)
	if p.AuthFail != nil {
		f.AuthFail = *p.AuthFail
	}
}

// handlePatchFaults serves POST /_sim/faults: a partial update answered with the full
// settings. Unknown fields are refused so a misspelt rate cannot silently do nothing.
func (s *Simulator) handlePatchFaults(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	var patch faultsPatch
	err := dec.Decode(&patch)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("body must hold a single JSON object")
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid faults: " + err.Error()})
		return
	}
	faults, err := s.updateFaults(patch.applyTo)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, controlError{Error: "invalid faults: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, faults)
}

// handleHealth serves GET /healthz.
func handleHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok")
}
