package dispatch

// FailAfterClaim makes every step firing of d fail with err right after its claim,
// inside its transaction, as a firer killed mid-step would (nil: fire normally).
func FailAfterClaim(d *Dispatcher, err error) {
	if err == nil {
		d.afterClaim = nil
		return
	}
	d.afterClaim = func() error { return err }
}

// RenderDigest is renderDigest, for the trimming test.
var RenderDigest = renderDigest
