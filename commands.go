package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"herald/access"
	"herald/audit"
	"herald/config"
	"herald/dispatch"
	"herald/internal/app"
	"herald/kernel"
	"herald/migrations"
	"herald/models"
	"herald/simulator"
)

// openMigrated opens the configured database with every migration applied (under the
// start lock, so a command run beside starting processes waits its turn).
func openMigrated(ctx context.Context, getenv config.Getenv) (*models.Store, error) {
	cfg, store, err := openStore(getenv)
	if err != nil {
		return nil, err
	}
	if _, err := app.Migrate(ctx, store, cfg.Location); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// openStore loads the configuration and opens the database it names.
func openStore(getenv config.Getenv) (*config.Config, *models.Store, error) {
	cfg, err := config.Load(getenv)
	if err != nil {
		return nil, nil, err
	}
	store, err := app.OpenStore(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, store, nil
}

func migrateCommand(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "up" && args[0] != "status") {
		return errors.New("usage: herald migrate up|status")
	}
	cfg, store, err := openStore(getenv)
	if err != nil {
		return err
	}
	defer store.Close()
	if args[0] == "up" {
		applied, err := app.Migrate(ctx, store, cfg.Location)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "applied %d migration(s)\n", applied)
		return nil
	}
	list, err := migrations.List(ctx, store.SQL(), store.Dialect())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-8s %-28s %s\n", "VERSION", "MIGRATION", "APPLIED")
	for _, m := range list {
		at := "pending"
		if m.Applied {
			at = m.AppliedAt
		}
		fmt.Fprintf(stdout, "%-8d %-28s %s\n", m.Version, m.Source, at)
	}
	return nil
}

// adminUsage lists the admin subcommands.
const adminUsage = `usage: herald admin create --username U --role admin|operator|viewer (password on stdin)
       herald admin reset-password --username U (new password on stdin)`

func adminCommand(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(adminUsage)
	}
	switch args[0] {
	case "create":
		return adminCreate(ctx, args[1:], getenv, stdin, stdout)
	case "reset-password":
		return adminResetPassword(ctx, args[1:], getenv, stdin, stdout)
	}
	return errors.New(adminUsage)
}

// readPassword reads one line from stdin: the password, without its line ending.
func readPassword(stdin io.Reader) (string, error) {
	password, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password from stdin: %w", err)
	}
	return strings.TrimRight(password, "\r\n"), nil
}

func adminCreate(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("admin create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	username := fs.String("username", "", "the new user's name")
	role := fs.String("role", "admin", "admin, operator or viewer")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("admin create: %w", err)
	}
	password, err := readPassword(stdin)
	if err != nil {
		return fmt.Errorf("admin create: %w", err)
	}
	store, err := openMigrated(ctx, getenv)
	if err != nil {
		return err
	}
	defer store.Close()
	u, err := cliService(store, nil).Access().CreateUser(ctx, cliActor, *username, password, access.Role(*role))
	if err != nil {
		return fmt.Errorf("admin create: %w", err)
	}
	fmt.Fprintf(stdout, "created %s user %s\n", u.Role, u.Username)
	return nil
}

// adminResetPassword sets a console user's password without the old one, for a lost
// password (the last admin's too): the new password comes from stdin and must pass the
// same rule as everywhere else; every session of the user is signed out.
func adminResetPassword(ctx context.Context, args []string, getenv config.Getenv, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("admin reset-password", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	username := fs.String("username", "", "the user whose password to set")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("admin reset-password: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin reset-password: unexpected argument %q (the password is read from stdin)", fs.Arg(0))
	}
	if strings.TrimSpace(*username) == "" {
		return errors.New("admin reset-password: --username is required")
	}
	password, err := readPassword(stdin)
	if err != nil {
		return fmt.Errorf("admin reset-password: %w", err)
	}
	store, err := openMigrated(ctx, getenv)
	if err != nil {
		return err
	}
	defer store.Close()
	u, err := store.Access().UserByUsername(ctx, *username)
	if errors.Is(err, kernel.ErrNotFound) {
		return fmt.Errorf("admin reset-password: no console user is named %q", access.NormalizeUsername(*username))
	}
	if err != nil {
		return fmt.Errorf("admin reset-password: %w", err)
	}
	if err := cliService(store, nil).Access().ResetPassword(ctx, cliActor, u, password); err != nil {
		return fmt.Errorf("admin reset-password: %w", err)
	}
	fmt.Fprintf(stdout, "set a new password for %s user %s; their sessions were signed out\n", u.Role, u.Username)
	if u.Disabled {
		fmt.Fprintf(stdout, "note: %s is disabled and cannot sign in until an admin enables them on the Users page\n", u.Username)
	}
	return nil
}

func apikeyCommand(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: herald apikey create --name N --scopes send,read,admin [--max-recipients N] [--expires YYYY-MM-DD] [--callback-url URL [--callback-allow-private]]")
	}
	fs := flag.NewFlagSet("apikey create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "what the key is for, e.g. the calling system")
	scopes := fs.String("scopes", "send,read", "comma-separated: send, read, admin")
	maxRecipients := fs.String("max-recipients", "", "the most recipients one request may reach (default: no cap of the key's own)")
	expires := fs.String("expires", "", "the last day the key works, YYYY-MM-DD in HERALD_TIMEZONE (default: never)")
	callbackURL := fs.String("callback-url", "", "where the status events of the key's messages are posted (default: none)")
	callbackPrivate := fs.Bool("callback-allow-private", false, "let the callback URL be on a private network")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	in := access.APIKeyInput{Name: *name, Scopes: *scopes, MaxRecipients: *maxRecipients, Expires: *expires}
	var cb *access.CallbackSetting
	if *callbackURL != "" {
		cb = &access.CallbackSetting{URL: *callbackURL, AllowPrivate: *callbackPrivate}
		// Checked here too, to name the flag; the service checks it again.
		if err := access.CheckCallback(cb); err != nil {
			return fmt.Errorf("apikey create: callback-url: %w", err)
		}
		in.Callback = cb
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	store, err := openMigrated(ctx, getenv)
	if err != nil {
		return err
	}
	defer store.Close()
	k, secret, err := cliService(store, cfg.Location).Access().CreateAPIKey(ctx, cliActor, in)
	if err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	fmt.Fprintf(stdout, "%s\n", secret)
	if cb != nil {
		fmt.Fprintf(stdout, "callback secret: %s\n", cb.Secret)
	}
	fmt.Fprintf(stderr, "created API key %q with scopes %s; the key above is shown only once\n", k.Name, k.Scopes)
	return nil
}

// cliActor is the command line, as the audit log records who acted.
var cliActor = audit.System("cli")

// cliService is the service layer for a command: the changes it makes follow the
// console's and the API's rules and are audited alike. loc is HERALD_TIMEZONE (nil: UTC).
func cliService(store *models.Store, loc *time.Location) *dispatch.Dispatcher {
	return dispatch.NewStoreOnly(store, loc)
}

func simulateCommand(ctx context.Context, args []string, stdout io.Writer) error {
	return simulator.RunCommand(ctx, args, stdout)
}
