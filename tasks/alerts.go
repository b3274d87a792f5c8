package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
)

// TypeFireAlertStep fires one step of an alert's escalation at its due time.
const TypeFireAlertStep = "alert:step"

// AlertStepPayload is the payload of a step task.
type AlertStepPayload struct {
	StepID int64 `json:"step_id"`
}

// alertStepTaskID names a step's task: one task per step, so enqueueing it again is
// harmless. What fires a step once is the compare-and-set on its row, not this id.
func alertStepTaskID(stepID int64) string { return "alert-step:" + strconv.FormatInt(stepID, 10) }

// NewAlertStepTask returns the task that fires a step at its due time. Asynq keeps due
// times in whole seconds, so the task may run up to a second early: its handler waits
// for the due time itself.
func NewAlertStepTask(stepID int64, due time.Time) *asynq.Task {
	payload, _ := json.Marshal(AlertStepPayload{StepID: stepID})
	return asynq.NewTask(TypeFireAlertStep, payload, asynq.TaskID(alertStepTaskID(stepID)),
		asynq.Queue(QueueMaintenance), asynq.ProcessAt(due), asynq.MaxRetry(3))
}

// EnqueueAlertStep schedules the task of a step; a step already scheduled is fine.
func (e *Enqueuer) EnqueueAlertStep(ctx context.Context, stepID int64, due time.Time) error {
	_, err := e.client.EnqueueContext(ctx, NewAlertStepTask(stepID, due))
	if err == nil {
		e.woke(ctx, 1)
	}
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("tasks: enqueue alert step %d: %w", stepID, err)
	}
	return nil
}

// AlertStepHandler runs step tasks with fire, which fires a step if it is due and has
// not fired (dispatch.Dispatcher.FireAlertStepNow).
type AlertStepHandler func(ctx context.Context, stepID int64) error

// ProcessTask implements asynq.Handler.
func (h AlertStepHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p AlertStepPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return fmt.Errorf("tasks: alert step payload: %w: %w", err, asynq.SkipRetry)
	}
	return h(ctx, p.StepID)
}
