package tasks

// Replacing is replacing, for tests that look for a replacement task.
var Replacing = replacing
