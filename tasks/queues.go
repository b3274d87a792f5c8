package tasks

import (
	"github.com/hibiken/asynq"

	"herald/delivery"
)

// MessageQueueDepths reads each message queue's depth and latency, most urgent first,
// for the dashboard. A queue that never held a task does not exist yet in Redis: it is
// listed empty.
func MessageQueueDepths(insp *asynq.Inspector) []delivery.QueueDepth {
	var out []delivery.QueueDepth
	for _, q := range []string{QueueHigh, QueueNormal, QueueLow} {
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			out = append(out, delivery.QueueDepth{Name: q})
			continue
		}
		out = append(out, delivery.QueueDepth{Name: q, Pending: info.Pending, Active: info.Active,
			Scheduled: info.Scheduled, Retry: info.Retry, Latency: info.Latency})
	}
	return out
}
