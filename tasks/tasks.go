// Package tasks is everything Asynq: task types and payloads, the send handler (which
// applies the retry policy and quiet hours of package delivery), the rate limiter,
// the sweeper and the server and scheduler that run them.
//
// MySQL is the source of truth. A task only says "look at message X now"; the handler
// claims the row with a compare-and-set before it calls a platform, so a task delivered
// twice, or re-enqueued by the sweeper after Redis lost it, can never send twice.
package tasks

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"herald/delivery"
	"herald/models"
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
	QueueHigh        = string(models.PriorityHigh)
	QueueNormal      = string(models.PriorityNormal)
	QueueLow         = string(models.PriorityLow)
	QueueMaintenance = "maintenance"
)

// MessageQueues maps the message queues to their weights: high 6, normal 3, low 1
// (delivery.QueueWeights).
var MessageQueues = delivery.QueueWeights

// Queues are every queue a worker serves, with their weights. Maintenance tasks are few
// and short (one every 3 s) but must not wait behind a backlog of messages: they weigh
// as much as high.
//
// Status callbacks have a queue of their own with a small weight: a slow receiver holds
// a few workers at most.
var Queues = map[string]int{QueueHigh: MessageQueues[QueueHigh], QueueNormal: MessageQueues[QueueNormal], QueueLow: MessageQueues[QueueLow],
	QueueMaintenance: 6, QueueCallbacks: 2}

// QueueFor returns the queue of a priority; unknown priorities go to normal
// (delivery.Priority.Queue).
func QueueFor(priority models.Priority) string { return priority.Queue() }

// SendMessagePayload is the payload of a send task: one message (MessageID), or a chunk
// of messages of one batch or one sweep (MessageIDs).
type SendMessagePayload struct {
	MessageID  string   `json:"message_id,omitempty"`
	MessageIDs []string `json:"message_ids,omitempty"`
}

// IDs returns the messages the task carries.
func (p SendMessagePayload) IDs() []string {
	if p.MessageID != "" {
		return []string{p.MessageID}
	}
	return p.MessageIDs
}

// Job is one send task to hand to Asynq: its id, the messages it carries, and when it
// may run.
type Job struct {
	TaskID     string
	MessageIDs []string
	Priority   models.Priority
	ProcessAt  time.Time
}

// Single returns the job of one message; replaces is empty for the message's own first
// task (see SendTaskID).
func Single(messageID string, priority models.Priority, at time.Time, replaces string) Job {
	return Job{TaskID: SendTaskID(messageID, replaces), MessageIDs: []string{messageID}, Priority: priority, ProcessAt: at}
}

// ChunkSize is how many messages one send task carries at most. Asynq's cost (a dequeue
// script, a completion script, a lease) is paid once per task; a chunk pays it once for
// all its messages, which is what lets a fan-out drain faster than Asynq moves empty
// tasks (BenchmarkPipeline, docs/benchmarks.md). Larger chunks gain little more and hold
// more messages behind one slow call.
const ChunkSize = 100

// Chunk packs messages of one priority and one due time into jobs of at most ChunkSize
// messages, dividing them evenly. id names the k-th job (from 1) by its first message. A
// single message gets a single job with that name too.
func Chunk(ids []string, priority models.Priority, at time.Time, id func(first string, k int) string) []Job {
	if len(ids) == 0 {
		return nil
	}
	n := (len(ids) + ChunkSize - 1) / ChunkSize
	jobs := make([]Job, 0, n)
	for k := range n {
		lo, hi := k*len(ids)/n, (k+1)*len(ids)/n
		jobs = append(jobs, Job{TaskID: id(ids[lo], k+1), MessageIDs: ids[lo:hi:hi], Priority: priority, ProcessAt: at})
	}
	return jobs
}

// NewSendMessageTask returns the task of a job, with ProcessAt as its earliest run time.
func NewSendMessageTask(j Job) *asynq.Task {
	return asynq.NewTask(TypeSendMessage, sendPayload(j.MessageIDs),
		asynq.TaskID(j.TaskID),
		asynq.Queue(QueueFor(j.Priority)),
		asynq.ProcessAt(j.ProcessAt),
		// Herald counts attempts in MySQL and decides itself when to stop; Asynq's
		// counter only guards against a task looping forever.
		asynq.MaxRetry(maxAsynqRetry),
	)
}

// sendPayload is the payload of a send task carrying ids.
func sendPayload(ids []string) []byte {
	p := SendMessagePayload{MessageIDs: ids}
	if len(ids) == 1 {
		p = SendMessagePayload{MessageID: ids[0]}
	}
	payload, _ := json.Marshal(p)
	return payload
}

// Task ids. What prevents a second send is the compare-and-set claim in the database,
// never the task id; the id only keeps intake and the sweeper from enqueueing one task
// twice, and each message row records the id of the task that carries it (task_id):
//
//   - a message sent on its own: the message id;
//   - a chunk of an intake: the batch id and the chunk's number (ChunkTaskID);
//   - a message that failed inside a chunk retries on its own task: the message id;
//   - a task that replaces one a dead worker held, or one Redis lost, is named after its
//     first message and what it replaces (SendTaskID): the expired claim's token, the
//     orphaned task, or the sweep that found the task missing.

// SendTaskID is the id of a task that carries messageID first: the message id itself, or,
// for a task that replaces another, the message id and what it replaces. The dead
// worker's task may still be held as active in Redis until Asynq's own recoverer runs, up
// to two minutes later; an id of its own lets the message go out again at once.
func SendTaskID(messageID, replaces string) string {
	if replaces == "" {
		return messageID
	}
	return messageID + ":" + replaces
}

// ChunkTaskID is the id of the k-th chunk task (from 1) of a batch.
func ChunkTaskID(batchID string, k int) string {
	return batchID + ":chunk-" + strconv.Itoa(k)
}

// replacing names what a replacement task replaces, short and fixed by the replaced
// task's id, so that passes which still see the old task do not enqueue a second
// replacement while the first waits, and ids do not grow when a replacement is replaced.
func replacing(kind, taskID string) string {
	sum := sha1.Sum([]byte(taskID))
	return kind + "-" + hex.EncodeToString(sum[:6])
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
	if err := json.Unmarshal(b, &p); err != nil || len(p.IDs()) == 0 {
		return p, fmt.Errorf("tasks: bad send payload %q: %v: %w", b, err, asynq.SkipRetry)
	}
	return p, nil
}
