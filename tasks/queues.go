package tasks

import (
	"context"

	"github.com/hibiken/asynq"

	"herald/delivery"
)

// MessageQueueDepths reads each message queue's depth and latency, most urgent first,
// for the dashboard; its scheduled tasks are those in Herald's schedule (enq) and any
// Asynq still holds as scheduled. A queue that never held a task does not exist yet in
// Redis: it is listed empty.
func MessageQueueDepths(insp *asynq.Inspector, enq *Enqueuer) []delivery.QueueDepth {
	var out []delivery.QueueDepth
	for _, q := range scheduleQueues {
		scheduled, _ := enq.Scheduled(context.Background(), q)
		info, err := insp.GetQueueInfo(q)
		if err != nil {
			out = append(out, delivery.QueueDepth{Name: q, Scheduled: scheduled})
			continue
		}
		out = append(out, delivery.QueueDepth{Name: q, Pending: info.Pending, Active: info.Active,
			Scheduled: scheduled + info.Scheduled, Retry: info.Retry, Latency: info.Latency})
	}
	return out
}
