package main

import (
	"context"
	"flag"
	"io"

	"herald/config"
	"herald/internal/app"
)

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
	a, err := app.New(ctx, cfg, *role, app.NewLogger(cfg, stderr), stdout)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}
