// Package simulator is a fault-injecting stand-in for every platform Herald delivers to:
// the generic JSON contract (Tianyuan, Zhaohu), WeCom, Feishu, signed webhooks and SMTP.
//
// It records every delivery it accepts and, on request, fails in the ways real platforms
// do: server errors, silence, rate limiting, permanent rejection, bad credentials, and
// the ambiguous case of a delivery that was recorded but answered too late. One uniform
// random draw per request picks the outcome, so a seed makes a run reproducible. WeCom
// and Feishu also keep their documented per-person limits the way they do: a call past
// one is answered with success and delivers nothing, and the statistics count it
// (dropped_silently).
//
// The same Simulator serves HTTP (Handler), SMTP (ServeSMTP) and the in-process sandbox
// adapter (Accept), so all three share one record and one set of fault rates.
// RunCommand wraps it as the `herald simulate` command.
package simulator
