package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"herald/channels"
	"herald/kernel"
	"herald/models"
	"herald/sending"
)

// A step may choose how its notices go (PolicyStep.Via): step 1 by WeCom, step 2 by
// SMS, step 3 by a phone call. A call's outcome comes back from the voice provider
// (package phone): pressing 1 acknowledges the alert via AckViaVoice, and a call not
// answered on a step with AdvanceOnNoAnswer fires the next step at once
// (AdvanceOnNoAnswer). Herald's own notices (taken, recovered, nobody answered) never
// go by voice.

// VoicePlatform is the platform of phone calls: a step whose notices go through it
// places calls, and Herald's own notices never go through it.
const VoicePlatform = "voice"

// AckViaVoice acknowledges an alert by pressing 1 on a call of one of its steps.
const AckViaVoice = "voice"

// SkipViaGone: the account or platform a step's via names was deleted after the
// policy was saved (or has no default account any more), so the step called nobody.
const SkipViaGone = "via_unavailable"

// SkipViaUnfit: the alert's content cannot go the way a step's via names (an SMS or a
// call through a cloud provider needs the alert's template to name the provider's
// template), so the step called nobody.
const SkipViaUnfit = "via_unfit"

// CallBook is what escalation asks of the calls' domain (package phone): to record the
// calls a step places, in the step's transaction, so that their outcomes can be traced
// back to the step; and to cancel, in the transaction that ends an alert, the calls not
// placed yet, so that nobody is rung about an alert that is taken or over.
type CallBook interface {
	RecordCalls(ctx context.Context, tx *models.Store, s StepCalls) error
	CancelCalls(ctx context.Context, tx *models.Store, alertID int64, reason string, now time.Time) error
}

// StepCalls are the calls one step of an alert places: its messages on a voice account.
type StepCalls struct {
	AlertID  int64
	N, Round int
	// Advance is the step's AdvanceOnNoAnswer.
	Advance  bool
	Messages []models.Message
	// Names maps the messages' recipient ids to their external ids.
	Names map[int64]string
}

// Why a call was not placed (CallBook.CancelCalls).
const (
	CallCancelledAcknowledged = "alert_acknowledged"
	CallCancelledResolved     = "alert_resolved"
	CallCancelledExhausted    = "alert_exhausted"
)

// checkVia validates a step's via and advance_on_no_answer: via names a platform with a
// default account, or an account; advancing on no answer needs a step that calls.
func (d *Service) checkVia(ctx context.Context, field string, s *PolicyStep) error {
	acct, err := viaAccount(ctx, d.store, s.Via)
	if errors.Is(err, kernel.ErrNotFound) {
		if slices.Contains(channels.Platforms, s.Via) {
			return kernel.Invalid(field+".via", "alerts.invalid.via_no_default", "Name", s.Via)
		}
		return kernel.Invalid(field+".via", "alerts.invalid.via_unknown", "Name", s.Via)
	}
	if err != nil {
		return err
	}
	if s.AdvanceOnNoAnswer && (acct == nil || acct.Platform != VoicePlatform) {
		return kernel.Invalid(field+".advance_on_no_answer", "alerts.invalid.advance_needs_voice")
	}
	return nil
}

// viaAccount is the account a step's via names: nil for "" (the alert's own account),
// the default account of a platform, or the account of that name. kernel.ErrNotFound:
// none.
func viaAccount(ctx context.Context, store *models.Store, via string) (*sending.Account, error) {
	switch {
	case via == "":
		return nil, nil
	case slices.Contains(channels.Platforms, via):
		return store.Sending().DefaultAccount(ctx, via)
	}
	return store.Sending().AccountByName(ctx, via)
}

// stepAccount is the account a step's notices go through and its platform: the
// alert's own, or the one its via names. ok is false when the via names nothing any
// more.
func (d *Service) stepAccount(ctx context.Context, a *Alert, step PolicyStep) (id int64, platform string, ok bool, err error) {
	acct, err := viaAccount(ctx, d.store, step.Via)
	switch {
	case errors.Is(err, kernel.ErrNotFound):
		return 0, "", false, nil
	case err != nil:
		return 0, "", false, err
	case acct == nil:
		return a.AccountID, "", true, nil
	}
	return acct.ID, acct.Platform, true, nil
}

// noticeAccount is the account Herald's own notices of an alert go through (taken,
// recovered, nobody answered): the alert's own, unless that is a voice account; then
// the first step's that is not. 0: every way the alert knows is a call.
func (d *Service) noticeAccount(ctx context.Context, a *Alert) (int64, error) {
	own, err := d.store.Sending().AccountByID(ctx, a.AccountID)
	if err != nil && !errors.Is(err, kernel.ErrNotFound) {
		return 0, err
	}
	if own != nil && own.Platform != VoicePlatform {
		return own.ID, nil
	}
	for _, s := range a.PolicyCopy.Steps {
		id, platform, ok, err := d.stepAccount(ctx, a, s)
		if err != nil {
			return 0, err
		}
		if ok && s.Via != "" && platform != VoicePlatform {
			return id, nil
		}
	}
	return 0, nil
}

// cancelCalls cancels, in tx, the calls of alert a not placed yet, for reason, in
// book (nil: no calls are recorded).
func cancelCalls(ctx context.Context, book CallBook, tx *models.Store, a *Alert, reason string, now time.Time) error {
	if book == nil {
		return nil
	}
	return book.CancelCalls(ctx, tx, a.ID, reason, now)
}

// AdvanceOnNoAnswer fires at once the step after step n of round of alert alertID,
// because a call of that step was not answered (or the line was busy) and the step
// says to advance then. It does so only while that step is the alert's last fired
// and the alert still escalates: the next step's due time is moved to now by a
// compare-and-set, and the step is fired as the step engine fires any (its claim makes
// a second report, or the recovery poll, harmless). It reports whether this call fired
// the next step.
func (d *Service) AdvanceOnNoAnswer(ctx context.Context, alertID int64, n, round int) (bool, error) {
	a, err := Of(d.store).AlertByID(ctx, alertID)
	if err != nil {
		return false, err
	}
	if !a.Escalating() || a.Step != n || a.Round != round || n < 1 || n > len(a.PolicyCopy.Steps) ||
		!a.PolicyCopy.Steps[n-1].AdvanceOnNoAnswer {
		return false, nil
	}
	now := d.now()
	next, err := Of(d.store).BringNextStepForward(ctx, a, now)
	if err != nil || next == 0 {
		return false, err
	}
	fired, err := d.FireAlertStep(ctx, next, now)
	if err != nil || !fired {
		return false, err
	}
	id := strconv.FormatInt(a.ID, 10)
	d.log.Info("alert: call not answered; next step fired", "alert", id, "step", n, "round", round)
	return true, nil
}

// BringNextStepForward moves the due time of the step that follows a's last fired step
// to now, if it has neither fired nor been cancelled, while a is still at that step: the
// compare-and-set of advancing on no answer. It returns the step's id, or 0 when
// nothing was moved.
func (s *Ledger) BringNextStepForward(ctx context.Context, a *Alert, now time.Time) (int64, error) {
	var id int64
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		var steps []AlertStep
		if err := tx.Where("alert_id = ? AND fired_at IS NULL AND cancelled_at IS NULL", a.ID).Order("id").Limit(1).Find(&steps).Error; err != nil {
			return err
		}
		if len(steps) == 0 {
			return nil
		}
		res := tx.Model(&AlertStep{}).Where("id = ? AND fired_at IS NULL AND cancelled_at IS NULL AND due_at > ?", steps[0].ID, now).
			Where("EXISTS (SELECT 1 FROM alerts WHERE alerts.id = ? AND alerts.step = ? AND alerts.round = ? AND alerts.state IN ?)",
				a.ID, a.Step, a.Round, AlertEscalating).
			Update("due_at", now)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			id = steps[0].ID
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("alert: bring the next step of alert %d forward: %w", a.ID, err)
	}
	return id, nil
}
