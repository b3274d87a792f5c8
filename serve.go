package main

import (
	"context"
	"flag"
	"io"

	"github.com/redis/go-redis/v9"

	"herald/config"
	"herald/internal/app"
)

// setRedisLogger routes go-redis's own messages into the process log. Only main sets
// it: the logger is a global that go-redis reads without a lock, so tests that start
// many Herald instances in one process leave it alone.
var setRedisLogger bool

func serveCommand(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "all", "all, web, worker or scheduler")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := app.CheckRole(*role); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	log, flushLog := app.NewLogger(cfg, stderr)
	defer flushLog()
	if setRedisLogger {
		redis.SetLogger(app.RedisLog{Log: log})
	}
	a, err := app.New(ctx, cfg, *role, log, stdout)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
