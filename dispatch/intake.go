package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"herald/models"
)

// ErrIdempotencyMismatch means the idempotency key was used before with a different
// request. It is the store's error, named here as part of SubmitIdempotent's contract.
var ErrIdempotencyMismatch = models.ErrIdempotencyMismatch

// ErrIdempotencyInFlight means the first request with the idempotency key is still
// being processed. It is the store's error, named here as part of SubmitIdempotent's
// contract.
var ErrIdempotencyInFlight = models.ErrIdempotencyInFlight

// errNoAPIKey refuses an idempotency key without the API key it belongs to: keys are
// remembered per API key.
var errNoAPIKey = errors.New("dispatch: an idempotency key needs the API key it belongs to")

// Replay is the answer already given to an idempotent request, to be sent again as it was.
type Replay struct {
	StatusCode int
	Body       []byte
}

// SubmitIdempotent submits a request that may carry an idempotency key. canonical is
// the request in one fixed encoding: its hash tells a repeat of the same request from
// another request with the same key. respond builds the answer to store, in the batch's
// own transaction, for a repeat to replay.
//
// Without a key it is Submit. With one, exactly one of its results is set: the new
// batch; the stored answer, when the request was already answered; or an error, which
// is ErrIdempotencyMismatch or ErrIdempotencyInFlight when the key is taken. A request
// that fails creates nothing and does not keep its key, so it can be sent again.
func (d *Dispatcher) SubmitIdempotent(ctx context.Context, req Request, canonical []byte, respond func(*Result) (status int, body []byte)) (*Result, *Replay, error) {
	if err := CheckIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, nil, err
	}
	if req.IdempotencyKey == "" {
		res, err := d.Submit(ctx, req)
		return res, nil, err
	}
	if req.APIKeyID == nil {
		return nil, nil, errNoAPIKey
	}
	sum := sha256.Sum256(canonical)
	req.RequestHash = hex.EncodeToString(sum[:])
	prev, err := d.store.Intake().BeginIdempotent(ctx, *req.APIKeyID, req.IdempotencyKey, req.RequestHash)
	if err != nil {
		return nil, nil, err
	}
	if prev != nil {
		replay := &Replay{StatusCode: prev.StatusCode}
		if prev.Response != nil {
			replay.Body = []byte(*prev.Response)
		}
		return nil, replay, nil
	}
	req.Respond = respond
	res, err := d.Submit(ctx, req)
	if err != nil {
		if aerr := d.store.Intake().AbortIdempotent(ctx, *req.APIKeyID, req.IdempotencyKey); aerr != nil {
			d.log.Error("dispatch: abort idempotent request", "error", aerr)
		}
		return nil, nil, err
	}
	return res, nil, nil
}
