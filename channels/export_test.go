package channels

import "time"

// SetSMTPLimitHold sets how long a relay's learnt connection ceiling holds, until the
// test ends.
func SetSMTPLimitHold(t interface{ Cleanup(func()) }, d time.Duration) {
	old := smtpLimitHold
	smtpLimitHold = d
	t.Cleanup(func() { smtpLimitHold = old })
}
