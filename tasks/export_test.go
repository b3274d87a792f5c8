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

// QuickStarts is how many times w's quick server has started.
func (w *Worker) QuickStarts() int64 { return w.starts.Load() }

// SelfWoken is how many message tasks w found while its quick server was stopped, and
// woke itself for.
func (w *Worker) SelfWoken() int64 { return w.selfWoken.Load() }

// Quick reports whether w's quick server runs.
func (w *Worker) Quick() bool { return w.quick.Load() }
