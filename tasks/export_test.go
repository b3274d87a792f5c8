package tasks

// Replacing is replacing, for tests that look for a replacement task.
var Replacing = replacing

// ScheduleKey is scheduleKey, for tests that take a job off the schedule.
var ScheduleKey = scheduleKey
