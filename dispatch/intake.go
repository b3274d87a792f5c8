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
	prev, err := d.Store.BeginIdempotent(ctx, *req.APIKeyID, req.IdempotencyKey, req.RequestHash)
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
		if aerr := d.Store.AbortIdempotent(ctx, *req.APIKeyID, req.IdempotencyKey); aerr != nil {
			d.Log.Error("dispatch: abort idempotent request", "error", aerr)
		}
		return nil, nil, err
	}
	return res, nil, nil
}

// Cancel cancels a pending or failed message, so it is never sent, and counts it for
// the dashboard; a message in any other state is left as it is (models.ErrStateChanged).
// It is Retry's counterpart: the console and the API both act through the two.
func (d *Dispatcher) Cancel(ctx context.Context, m *models.Message) error {
	if err := d.Store.CancelMessage(ctx, m.ID); err != nil {
		return err
	}
	if m.CallbackKeyID != nil {
		d.Callbacks.Kick(*m.CallbackKeyID)
	}
	d.Stats.Count(m.AccountID, "cancelled", 1)
	return nil
}

// resendChunk is how many stopped messages a bulk re-send reads at a time.
const resendChunk = 500

// Resent is what one bulk re-send did.
type Resent struct {
	// Retried were made due again.
	Retried int
	// Skipped were retried or removed by someone else meanwhile.
	Skipped int
	// Remaining are stopped still: beyond the limit, or stopped meanwhile.
	Remaining int64
}

// ResendStopped retries the stopped messages a filter selects, oldest first, a chunk at
// a time, looking at no more than limit of them: the caller bounds the run so that it
// ends in time, and a further run picks up the rest.
func (d *Dispatcher) ResendStopped(ctx context.Context, f models.MessageFilter, limit int) (Resent, error) {
	var (
		out   Resent
		after *models.MessageCursor
	)
	for out.Retried+out.Skipped < limit {
		chunk, err := d.Store.StoppedMessages(ctx, f, after, min(resendChunk, limit-out.Retried-out.Skipped))
		if err != nil {
			return out, err
		}
		for i := range chunk {
			switch err := d.Retry(ctx, &chunk[i]); {
			case err == nil:
				out.Retried++
			case errors.Is(err, models.ErrStateChanged), errors.Is(err, models.ErrNotFound):
				out.Skipped++
			default:
				return out, err
			}
		}
		if len(chunk) < resendChunk {
			break
		}
		last := chunk[len(chunk)-1]
		after = &models.MessageCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	var err error
	out.Remaining, err = d.Store.CountStopped(ctx, f)
	return out, err
}
