package simulator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// shutdownGrace is how long in-flight requests get to finish when the command stops.
const shutdownGrace = 5 * time.Second

// commandConfig is what the simulate flags describe.
type commandConfig struct {
	addr     string
	smtpAddr string
	faults   Faults
	opts     Options
}

// RunCommand implements `herald simulate [flags]`: it serves HTTP on --addr (the
// platforms under /tianyuan, /zhaohu, /wecom, /feishu and /webhook, an account's
// base_url being the simulator's address plus that prefix) and SMTP on --smtp-addr,
// prints one line saying where to stdout, and runs until ctx is cancelled, then shuts
// down gracefully. -h prints the flags to stdout and returns nil.
func RunCommand(ctx context.Context, args []string, stdout io.Writer) error {
	cfg, err := parseCommandFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}

	httpLn, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("simulate: --addr: %w", err)
	}
	smtpLn, err := net.Listen("tcp", cfg.smtpAddr)
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("simulate: --smtp-addr: %w", err)
	}

	sim := NewWithOptions(cfg.faults, cfg.opts)
	srv := &http.Server{
		Handler:           sim.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Serve(httpLn) }()
	smtpDone := make(chan error, 1)
	go func() { smtpDone <- sim.ServeSMTP(smtpLn) }()

	fmt.Fprintf(stdout, "herald simulate: HTTP on http://%s, SMTP on %s\n", httpLn.Addr(), smtpLn.Addr())

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		runErr = fmt.Errorf("simulate: http: %w", err)
		httpDone <- nil // so the shutdown below does not wait on it again
	case err := <-smtpDone:
		runErr = fmt.Errorf("simulate: smtp: %w", err)
		smtpDone <- nil
	}

	// Silent (timeout-fault) requests would otherwise hold the shutdown open for minutes.
	sim.releaseHolds()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	smtpLn.Close()
	if err := <-httpDone; err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		runErr = fmt.Errorf("simulate: http: %w", err)
	}
	if err := <-smtpDone; err != nil && runErr == nil {
		runErr = fmt.Errorf("simulate: smtp: %w", err)
	}
	return runErr
}

// parseCommandFlags reads and validates the simulate flags. Errors name the flag.
func parseCommandFlags(args []string, stdout io.Writer) (commandConfig, error) {
	var cfg commandConfig
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	// Errors are returned to the caller, not printed; only -h writes the usage.
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:9900", "HTTP listen address")
	fs.StringVar(&cfg.smtpAddr, "smtp-addr", "127.0.0.1:2525", "SMTP listen address")
	latency := fs.Duration("latency", 0, "delay added before every answer, e.g. 5ms")
	fs.Float64Var(&cfg.faults.FailRate, "fail-rate", 0, "share of requests answered with a server error")
	fs.Float64Var(&cfg.faults.TimeoutRate, "timeout-rate", 0, "share of requests never answered")
	fs.Float64Var(&cfg.faults.ThrottleRate, "throttle-rate", 0, "share of requests answered as rate limited")
	fs.Float64Var(&cfg.faults.RejectRate, "reject-rate", 0, "share of requests rejected permanently")
	fs.Float64Var(&cfg.faults.AcceptThenTimeoutRate, "accept-then-timeout-rate", 0, "share of requests recorded but never answered")
	fs.BoolVar(&cfg.faults.AuthFail, "auth-fail", false, "fail every call's authentication")
	fs.Int64Var(&cfg.opts.Seed, "seed", 0, "seed for the fault draws; 0 picks a random one")
	fs.StringVar(&cfg.opts.WebhookSecret, "webhook-secret", "", "verify X-Herald-Signature on webhooks with this secret")
	fs.DurationVar(&cfg.opts.WeComTokenTTL, "wecom-token-ttl", defaultWeComTokenTTL, "lifetime of WeCom access tokens")
	fs.BoolVar(&cfg.opts.NoPlatformLimits, "no-platform-limits", false, "deliver past the platforms' documented limits (for benchmarks)")
	fs.DurationVar(&cfg.opts.FeishuTokenTTL, "feishu-token-ttl", defaultFeishuTokenTTL, "lifetime of Feishu tenant_access_tokens")
	fs.DurationVar(&cfg.opts.DingTalkTokenTTL, "dingtalk-token-ttl", defaultWeComTokenTTL, "lifetime of DingTalk access tokens")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, "Usage: herald simulate [flags]")
			fmt.Fprintln(stdout, "Platforms, under the HTTP address: "+strings.Join(PlatformPrefixes, " "))
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.faults.Latency = Duration(*latency)
	if err := cfg.faults.validate(flagName); err != nil {
		return cfg, err
	}
	if cfg.opts.WeComTokenTTL <= 0 {
		return cfg, fmt.Errorf("--wecom-token-ttl must be positive, got %s", cfg.opts.WeComTokenTTL)
	}
	if cfg.opts.FeishuTokenTTL <= 0 {
		return cfg, fmt.Errorf("--feishu-token-ttl must be positive, got %s", cfg.opts.FeishuTokenTTL)
	}
	if cfg.opts.DingTalkTokenTTL <= 0 {
		return cfg, fmt.Errorf("--dingtalk-token-ttl must be positive, got %s", cfg.opts.DingTalkTokenTTL)
	}
	return cfg, nil
}

// flagName turns a Faults JSON field name into its flag: fail_rate → --fail-rate.
func flagName(field string) string {
	return "--" + strings.ReplaceAll(field, "_", "-")
}
