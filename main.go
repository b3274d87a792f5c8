// Command herald is a duty-aware message dispatch console: it decides who receives each
// notification, records every message, and delivers them through Asynq workers to
// messaging platforms. See README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"herald/config"
)

const usage = `usage: herald [command] [flags]

commands:
  serve [--role all|web|worker|scheduler]    run Herald (the default command); stop with Ctrl-C or SIGTERM
  migrate up|status                          apply or list database migrations
  admin create --username U --role R         create a console user; password on stdin
  admin reset-password --username U          set a user's password (on stdin) and sign them out
  apikey create --name N --scopes send,read  create an API key (printed once); limits:
                [--max-recipients N] [--expires YYYY-MM-DD]
  simulate [--addr A] [--smtp-addr A] ...    run the platform simulator (see simulate --help)
  help, -h, --help                           show this list

Configuration comes from HERALD_* environment variables; see README.md.
`

func main() {
	setRedisLogger = true
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serveCommand(ctx, args, getenv, stdout, stderr)
	case "migrate":
		err = migrateCommand(ctx, args, getenv, stdout)
	case "admin":
		err = adminCommand(ctx, args, getenv, stdin, stdout)
	case "apikey":
		err = apikeyCommand(ctx, args, getenv, stdout, stderr)
	case "simulate":
		err = simulateCommand(ctx, args, stdout)
	default:
		fmt.Fprintf(stderr, "herald: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "herald: %v\n", err)
		return 1
	}
	return 0
}

// isHelp reports whether a first argument asks for the list of commands.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}
