package tasks

import "github.com/redis/go-redis/v9"

// Options exposes what a URL was parsed into, for the tests.
func (r *Redis) Options() redis.UniversalOptions { return r.opt }

// Replacing is replacing, for tests that look for a replacement task.
var Replacing = replacing
