package dispatch

import (
	"log/slog"
	"time"

	"herald/tasks"
)

// FailAfterClaim makes every step firing of d fail with err right after its claim,
// inside its transaction, as a firer killed mid-step would (nil: fire normally).
func FailAfterClaim(d *Dispatcher, err error) {
	d.alertConfig.AfterClaim = nil
	if err != nil {
		d.alertConfig.AfterClaim = func() error { return err }
	}
	buildAlerts(d)
}

// RenderDigest is renderDigest, for the trimming test.
var RenderDigest = renderDigest

// The dispatcher's settings that the tests change after their fixture has built it.

// SetClock makes now the clock of d.
func SetClock(d *Dispatcher, now func() time.Time) { d.clock = now; buildAlerts(d) }

// SetLocation makes loc the duty rule's time zone of d.
func SetLocation(d *Dispatcher, loc *time.Location) { d.loc = loc; buildAlerts(d) }

// SetAckLink makes link the maker of d's acknowledgment links.
func SetAckLink(d *Dispatcher, link func(messageID string, recipientID int64) string) {
	d.alertConfig.AckLink = link
	buildAlerts(d)
}

// SetAckObserver makes observe hear how long each alert waited for its first acknowledgment.
func SetAckObserver(d *Dispatcher, observe func(time.Duration)) {
	d.alertConfig.AckObserver = observe
	buildAlerts(d)
}

// EnqueuerOf is d's enqueuer, for a second dispatcher on the same queue.
func EnqueuerOf(d *Dispatcher) *tasks.Enqueuer { return d.enqueuer }

// LogOf is d's log.
func LogOf(d *Dispatcher) *slog.Logger { return d.log }
