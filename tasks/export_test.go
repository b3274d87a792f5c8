package tasks

// Replacing is replacing, for tests that look for a replacement task.
var Replacing = replacing

// ScheduleKey is scheduleKey, for tests that take a job off the schedule.
var ScheduleKey = scheduleKey

// ForgetDeleted is forgetDeleted, for the test that the embedded Redis does not keep
// every key it ever held.
func (e *EmbeddedRedis) ForgetDeleted() int { return e.forgetDeleted() }

// GroupByContent exposes groupByContent to tests.
var GroupByContent = groupByContent

// DropWakes has e publish no wake-up, as if every one were lost.
func (e *Enqueuer) DropWakes() { e.wakes.drop.Store(true) }
