// Package tasks is everything Asynq: task types and payloads, the send handler, the retry
// policy, the sweeper and the server and scheduler that run them.
//
// MySQL is the source of truth. A task only says "look at message X now"; the handler
// claims the row with a compare-and-set before it calls a platform, so a task delivered
// twice, or re-enqueued by the sweeper after Redis lost it, can never send twice.
package tasks

import (
	"encoding/json"
	"fmt"

	"github.com/hibiken/asynq"
)

// Task type names.
const (
	TypeSendMessage = "message:send"
	TypeSweep       = "maintenance:sweep"
	// TypeRecover returns claims whose worker died to failed and enqueues them again at
	// once; it runs every few seconds, the full sweep once a minute.
	TypeRecover = "maintenance:recover"
)

// Queue names: one per message priority, and one for Herald's own upkeep (the sweeper
// and the recovery pass), so that no operator sees work in a message queue they did
// not send.
const (
	QueueHigh        = "high"
	QueueNormal      = "normal"
	QueueLow         = "low"
	QueueMaintenance = "maintenance"
)

// MessageQueues maps the message queues to their weights: high 6, normal 3, low 1.
var MessageQueues = map[string]int{QueueHigh: 6, QueueNormal: 3, QueueLow: 1}

// Queues are every queue a worker serves, with their weights. Maintenance tasks are few
// and short (one every 3 s) but must not wait behind a backlog of messages: they weigh
// as much as high.
var Queues = map[string]int{QueueHigh: 6, QueueNormal: 3, QueueLow: 1, QueueMaintenance: 6}

// QueueFor returns the queue of a priority; unknown priorities go to normal.
func QueueFor(priority string) string {
	switch priority {
	case "high":
		return QueueHigh
	case "low":
		return QueueLow
	}
	return QueueNormal
}

// SendMessagePayload is the payload of a send task.
type SendMessagePayload struct {
	MessageID string `json:"message_id"`
}

// NewSendMessageTask returns the task that delivers one message, with processAt as its
// earliest run time. Its task id is SendTaskID's: the message id for the message's first
// task, so intake and the sweeper never enqueue it twice.
func NewSendMessageTask(j Job) *asynq.Task {
	payload, _ := json.Marshal(SendMessagePayload{MessageID: j.MessageID})
	return asynq.NewTask(TypeSendMessage, payload,
		asynq.TaskID(SendTaskID(j.MessageID, j.Replaces)),
		asynq.Queue(QueueFor(j.Priority)),
		asynq.ProcessAt(j.ProcessAt),
		// Herald counts attempts in MySQL and decides itself when to stop; Asynq's
		// counter only guards against a task looping forever.
		asynq.MaxRetry(maxAsynqRetry),
	)
}

// SendTaskID is the Asynq task id of a message's task: the message id, or, for a message
// whose worker died, the message id and what the new task replaces (the expired claim's
// token, or the orphaned task's id). The dead worker's task may still be held as active
// in Redis until Asynq's own recoverer runs, up to two minutes later; a task id of its
// own lets the message go out again at once. What prevents a second send is the
// compare-and-set claim in the database, never the task id.
func SendTaskID(messageID, replaces string) string {
	if replaces == "" {
		return messageID
	}
	return messageID + ":" + replaces
}

// NewRecoverTask returns the periodic task that releases expired claims.
func NewRecoverTask() *asynq.Task {
	return asynq.NewTask(TypeRecover, nil, asynq.Queue(QueueMaintenance), asynq.MaxRetry(0))
}

// maxAsynqRetry is generous: Herald's own handler errors are not counted as failures
// (see isFailure), so only crashes and unexpected errors reach it.
const maxAsynqRetry = 25

// NewSweepTask returns the periodic sweeper task.
func NewSweepTask() *asynq.Task {
	return asynq.NewTask(TypeSweep, nil, asynq.Queue(QueueMaintenance), asynq.MaxRetry(0))
}

func parseSendPayload(b []byte) (SendMessagePayload, error) {
	var p SendMessagePayload
	if err := json.Unmarshal(b, &p); err != nil || p.MessageID == "" {
		return p, fmt.Errorf("tasks: bad send payload %q: %v: %w", b, err, asynq.SkipRetry)
	}
	return p, nil
}
