package models

import (
	"herald/channels"
	"herald/sending"
)

// ErrorClasses are every error class a message can carry, in the order the console's
// filter lists them: the classes of channels' error classification, then Herald's own
// holds and refusals (quiet hours, no address on the platform).
var ErrorClasses = []string{string(channels.Throttled), string(channels.RateLimited), string(channels.Transient),
	string(channels.Auth), string(channels.Permanent), sending.ErrorClassQuietHours, ErrorNoAddress}
