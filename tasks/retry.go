package tasks

import (
	"errors"
	"time"

	"herald/channels"
	"herald/delivery"
)

// The retry policy itself (the table by error class, an account's adjustments, the
// decision a failure leads to) is delivery's (delivery/retry.go); this file tells Asynq
// what Herald decided.

// retryError tells Asynq to run the task again after a delay Herald chose.
type retryError struct {
	delay  time.Duration
	reason string
}

func (e *retryError) Error() string { return "retry in " + e.delay.String() + ": " + e.reason }

// retryDelay is Asynq's RetryDelayFunc: Herald's own delays, else Asynq's default.
func retryDelay(n int, err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return max(re.delay, 0)
	}
	// An unexpected error (a database outage, say): back off like a transient failure.
	return delivery.DefaultPolicy[channels.Transient].Delay(n+1, 0)
}

// isFailure keeps Herald's deliberate retries out of Asynq's failure counter, which would
// otherwise archive a message Herald still means to deliver.
func isFailure(err error) bool {
	var re *retryError
	return !errors.As(err, &re)
}
