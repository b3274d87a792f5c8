package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"herald/delivery"
	"herald/dispatch"
	"herald/handlers"
	"herald/phone"
	"herald/tasks"
	"herald/web"
)

// Run serves the process's role until ctx is cancelled, then shuts down gracefully and
// closes the App.
func (a *App) Run(ctx context.Context) error {
	defer a.Close()
	g, ctx := errgroup.WithContext(ctx)
	runWeb := a.Role == "all" || a.Role == "web"
	if a.Role == "all" || a.Role == "worker" {
		if err := a.startWorker(ctx, g); err != nil {
			return err
		}
	}
	if a.Role == "all" || a.Role == "scheduler" {
		if err := a.startScheduler(ctx, g); err != nil {
			return err
		}
	}
	statsDone := make(chan struct{})
	go func() { a.Stats.Run(ctx, time.Second, a.Log); close(statsDone) }()
	defer func() { <-statsDone }()

	// Every role serves HTTP on HERALD_ADDR: the console and API with the web role, and
	// /healthz, /readyz and /metrics only otherwise. /metrics may also have a listener of
	// its own (HERALD_METRICS_ADDR).
	h := &handlers.Handlers{Store: a.Store, Log: a.Log, Stats: a.Stats,
		Dispatch:    a.Dispatch,
		PingRedis:   func(context.Context) error { return a.Enqueuer.Ping() },
		Limiter:     a.Limiter,
		QueueDepths: func() []delivery.QueueDepth { return tasks.MessageQueueDepths(a.Inspector, a.Enqueuer) },
		Channels:    a.Channels,
		Location:    a.Config.Location,
		PublicURL:   a.Config.PublicURL,
	}
	opts := web.Options{Location: a.Config.Location, Log: a.Log, Redis: a.Redis.Asynq(),
		Metrics: web.NewMetrics(a.Metrics, a.Inspector, a.Enqueuer, a.Store, a.Log), MetricsToken: a.Config.MetricsToken,
		DefaultLanguage: a.Config.DefaultLanguage, TrustedProxies: a.Config.TrustedProxies}
	var handler http.Handler
	if runWeb {
		sessions := web.NewSessions(a.Config.SessionSecret, a.Store, a.Config.SessionIdle)
		h.Sessions = sessions
		var closeHandler func() error
		handler, closeHandler = web.NewHandler(h, sessions, opts)
		defer closeHandler()
	} else {
		handler = web.NewOpsHandler(h, opts)
	}
	ln := a.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.Config.Addr); err != nil {
			return fmt.Errorf("serve: listen on %s (HERALD_ADDR): %w", a.Config.Addr, err)
		}
	}
	if a.Config.MetricsAddr != "" {
		metricsLn, err := net.Listen("tcp", a.Config.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve: listen on %s (HERALD_METRICS_ADDR): %w", a.Config.MetricsAddr, err)
		}
		a.Log.Info("serving metrics", "url", "http://"+metricsLn.Addr().String()+"/metrics")
		serveHTTP(ctx, g, web.NewServer(a.Config.MetricsAddr, web.NewMetricsHandler(opts)), metricsLn)
	}
	if a.Role == "all" {
		a.serveSimulator(ctx, g)
	}
	a.Log.Info("listening", "url", "http://"+ln.Addr().String()+"/", "console", runWeb)
	serveHTTP(ctx, g, web.NewServer(a.Config.Addr, handler), ln)
	a.Log.Info("herald started", "role", a.Role, "embedded", a.Config.Embedded())
	err := g.Wait()
	// Requests have ended: hand the last gathered messages to Asynq.
	cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a.Dispatch.Close(cctx)
	return err
}

// serveSimulator runs the platform simulator's HTTP and SMTP servers in the process, on
// the loopback addresses configured (the embedded default's), for the demo's accounts.
// An address already taken (another Herald on this machine) leaves that server out with
// a warning: the console runs without it.
func (a *App) serveSimulator(ctx context.Context, g *errgroup.Group) {
	if addr := a.Config.SimulatorAddr; addr != "" {
		if ln, err := net.Listen("tcp", addr); err != nil {
			a.Log.Warn("the in-process simulator is not running: the demo's WeCom, Feishu and DingTalk accounts cannot send", "addr", addr, "error", err)
		} else {
			a.Log.Info("simulating WeCom, Feishu and DingTalk", "url", "http://"+ln.Addr().String()+"/")
			serveHTTP(ctx, g, web.NewServer(addr, a.Sim.Handler()), ln)
		}
	}
	if addr := a.Config.SimulatorSMTPAddr; addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			a.Log.Warn("the in-process simulator is not running: the demo's email account cannot send", "addr", addr, "error", err)
			return
		}
		a.Log.Info("simulating an SMTP server", "addr", ln.Addr().String())
		g.Go(func() error {
			go func() { <-ctx.Done(); ln.Close() }()
			if err := a.Sim.ServeSMTP(ln); err != nil && ctx.Err() == nil {
				return fmt.Errorf("simulator SMTP: %w", err)
			}
			return nil
		})
	}
}

// startWorker starts the Asynq worker that sends messages and runs maintenance tasks,
// the forwarder that moves scheduled tasks to their queues when they fall due, and the
// heartbeat that renews the leases of the claims it holds.
func (a *App) startWorker(ctx context.Context, g *errgroup.Group) error {
	store, err := a.SenderStore()
	if err != nil {
		return err
	}
	send, err := tasks.NewSender(tasks.SenderConfig{Store: store, Channels: a.Channels, Enqueuer: a.Enqueuer,
		Limiter: a.Limiter, Location: a.Config.Location, Log: a.Log, CallTimeout: a.Config.SendTimeout,
		Accounts: a.Accounts, Metrics: tasks.NewMetrics(a.Metrics, a.Channels), Stats: a.Stats,
		Callbacks: a.Callbacks, FallBackSoon: a.Dispatch.FallBackSoon, FoldThrottled: dispatch.FoldThrottled(a.Dispatch),
		Lease: a.Config.Knobs.Lease, RetryScale: a.Config.Knobs.RetryScale, Moot: phone.Book{}.Moot})
	if err != nil {
		return err
	}
	sweeper, err := a.Sweeper()
	if err != nil {
		send.Close()
		return err
	}
	worker := tasks.NewWorker(a.Redis.Asynq(), a.Enqueuer, tasks.WorkerOptions{Concurrency: a.Config.WorkerConcurrency,
		TaskCheckInterval: a.Config.TaskCheckInterval, IdleAfter: a.Config.Knobs.IdleAfter,
		IdleCheckInterval: a.Config.Knobs.IdleCheck, Log: a.Log}, send, sweeper, a.Callbacks)
	worker.Handle(tasks.TypeFireAlertStep, tasks.AlertStepHandler(a.Dispatch.Alerts().FireAlertStepNow))
	forwarder, err := tasks.NewForwarder(a.Enqueuer, sweeper, a.Log)
	if err != nil {
		send.Close()
		return err
	}
	go a.Dispatch.Alerts().RunEscalationPoll(ctx, escalationPoll)
	go a.Dispatch.RunDigestPoll(ctx, digestPoll)
	go a.Dispatch.RunSilencePass(ctx, silencePass)
	go dispatch.RunInhibitPass(ctx, a.Dispatch, inhibitPass)
	go a.Dispatch.Inbound().RunHeartbeatPoll(ctx, heartbeatPoll)
	if err := worker.Start(); err != nil {
		send.Close()
		return fmt.Errorf("serve: %w", err)
	}
	g.Go(func() error { forwarder.Run(ctx); return nil })
	// Leases are renewed until the worker has finished its tasks, not just until the
	// stop signal.
	beat, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	go send.KeepLeases(beat)
	g.Go(func() error { <-ctx.Done(); worker.Shutdown(); stopBeat(); send.Close(); return nil })
	return nil
}

// escalationPoll is how often each worker looks for overdue alert steps.
const escalationPoll = time.Second

// inhibitPass is how often each worker releases the alerts inhibited by sources that
// ended other than by their integration's recovery.
const inhibitPass = 2 * time.Second

// digestPoll is how often each worker looks for digest groups whose window closed.
const digestPoll = time.Second

// silencePass is how often each worker looks for silences to end.
const silencePass = time.Second

// heartbeatPoll is how often each worker looks for missed heartbeats: their intervals
// are a minute or more.
const heartbeatPoll = 5 * time.Second

// startScheduler starts the periodic maintenance tasks and enqueues a first sweep, so
// a restart picks up what was left at once.
func (a *App) startScheduler(ctx context.Context, g *errgroup.Group) error {
	sch, err := tasks.NewScheduler(a.Redis.Asynq(), a.Log, a.Config.Knobs.SweepEvery)
	if err != nil {
		return err
	}
	if err := sch.Start(); err != nil {
		return fmt.Errorf("serve: start scheduler: %w", err)
	}
	if err := tasks.SweepNow(ctx, a.Enqueuer.Client()); err != nil {
		a.Log.Warn("initial sweep not enqueued", "error", err)
	}
	g.Go(func() error { <-ctx.Done(); sch.Shutdown(); return nil })
	return nil
}

// serveHTTP serves srv on ln in g until ctx is cancelled, then shuts it down gracefully.
func serveHTTP(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener) {
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}
