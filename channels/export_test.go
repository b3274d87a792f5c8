package channels

import (
	"testing"
	"time"
)

// SetSMTPLimitHold sets how long a relay's learnt connection ceiling holds, until the
// test ends.
func SetSMTPLimitHold(t testing.TB, d time.Duration) {
	old := smtpLimitHold
	smtpLimitHold = d
	t.Cleanup(func() { smtpLimitHold = old })
}
