package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"herald/channels"
	"herald/config"
	"herald/dispatch"
	"herald/handlers"
	"herald/models"
	"herald/simulator"
	"herald/tasks"
	"herald/web"
)

var roles = map[string]bool{"all": true, "web": true, "worker": true, "scheduler": true}

func serveCommand(ctx context.Context, args []string, getenv config.Getenv, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "all", "all, web, worker or scheduler")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !roles[*role] {
		return fmt.Errorf("serve: --role must be all, web, worker or scheduler, not %q", *role)
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if *role != "all" && (cfg.Embedded() || cfg.EmbeddedRedis()) {
		return fmt.Errorf("serve: --role %s needs HERALD_MYSQL_DSN and HERALD_REDIS_URL: split roles share one MySQL and one Redis", *role)
	}
	log := newLogger(cfg, stderr)
	app, err := start(ctx, cfg, *role, log, stdout)
	if err != nil {
		return err
	}
	return app.run(ctx)
}

// app is one running Herald process.
type app struct {
	cfg   *config.Config
	role  string
	log   *slog.Logger
	store *models.Store
	redis *tasks.EmbeddedRedis  // nil unless embedded
	red   *tasks.Redis          // every Redis connection is made from it
	rdb   redis.UniversalClient // for the rate limiter
	insp  *asynq.Inspector      // for the dashboard and the sweeper
	enq   *tasks.Enqueuer
	reg   *prometheus.Registry
	stats *models.Stats
	sim   *simulator.Simulator
	http  *http.Server
	// listener, when set before run, is where the HTTP server listens (tests use a random port).
	listener net.Listener
	// sweepGrace is how long past due a message must be before the sweeper re-enqueues it.
	sweepGrace time.Duration
	// limitMargin widens every rate-limit window; see tasks.Limiter.
	limitMargin time.Duration
}

// start opens the database (migrating it in role all), makes sure a first admin exists,
// seeds demo data into a new database when asked, and connects to Redis.
func start(ctx context.Context, cfg *config.Config, role string, log *slog.Logger, stdout io.Writer) (*app, error) {
	store, err := models.Open(models.Options{MySQLDSN: cfg.MySQLDSN, DataDir: cfg.DataDir, SecretKey: cfg.SecretKey})
	if err != nil {
		return nil, err
	}
	a := &app{cfg: cfg, role: role, log: log, store: store, sweepGrace: 30 * time.Second, limitMargin: tasks.DefaultMargin}
	if err := a.prepareDatabase(ctx, stdout); err != nil {
		store.Close()
		return nil, err
	}
	a.red = cfg.Redis
	if cfg.EmbeddedRedis() {
		if a.redis, err = tasks.StartEmbeddedRedis(cfg.RedisPassword); err != nil {
			store.Close()
			return nil, err
		}
		if a.red, err = tasks.ParseRedisURL(a.redis.URL()); err != nil {
			a.close()
			return nil, err
		}
	}
	// One connection per worker goroutine at most, so a limiter check never queues
	// for a connection (the default pool is 10 per CPU).
	a.rdb = a.red.NewClient(cfg.WorkerConcurrency + 10)
	a.enq = tasks.NewEnqueuer(a.red.Asynq())
	a.insp = asynq.NewInspector(a.red.Asynq())
	a.stats = store.NewStats()
	a.reg = prometheus.NewRegistry()
	a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.sim = simulator.New(simulator.Faults{})
	return a, nil
}

// prepareDatabase runs the first-start steps under the database's start lock, so any
// number of processes of any roles started at once on a fresh database come up: the
// first to take the lock migrates (and seeds the demo into a new database when asked),
// the others find the work done. Only roles that serve the console create the first
// admin; workers and schedulers never create users.
func (a *app) prepareDatabase(ctx context.Context, stdout io.Writer) error {
	return a.store.WithStartLock(ctx, func() error {
		fresh, err := a.store.Migrate(ctx)
		if err != nil {
			return err
		}
		demo := a.cfg.Demo
		if !a.cfg.DemoSet {
			demo = a.cfg.Embedded()
		}
		if fresh && demo {
			if err := a.store.SeedDemo(ctx); err != nil {
				return err
			}
			a.log.Info("seeded demo data: sandbox account, sample staff, a duty week and a template")
		}
		if a.role != "all" && a.role != "web" {
			return nil
		}
		return a.ensureAdmin(ctx, stdout)
	})
}

// ensureAdmin creates the first console user while none exists, printing a generated
// password once if HERALD_ADMIN_PASSWORD is not set.
func (a *app) ensureAdmin(ctx context.Context, stdout io.Writer) error {
	n, err := a.store.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	password, generated := a.cfg.AdminPassword, false
	if password == "" {
		b := make([]byte, 15)
		_, _ = rand.Read(b)
		password, generated = base64.RawURLEncoding.EncodeToString(b), true
	}
	u, err := a.store.CreateUser(ctx, a.cfg.AdminUser, password, models.RoleAdmin)
	if err != nil {
		// Lost a race with `herald admin create` or another process: not an error.
		if n, cerr := a.store.CountUsers(ctx); cerr == nil && n > 0 {
			return nil
		}
	}
	var fe *models.FieldError
	if errors.As(err, &fe) {
		env := map[string]string{"username": "HERALD_ADMIN_USER", "password": "HERALD_ADMIN_PASSWORD"}[fe.Field]
		return &config.Error{Var: env, Msg: fe.Message}
	}
	if err != nil {
		return err
	}
	_ = a.store.Audit(ctx, models.AuditEntry{Actor: "system", ActorType: "system", Action: "user.create",
		TargetType: "user", TargetID: u.Username, Detail: "first admin"})
	if generated {
		fmt.Fprintf(stdout, "\nCreated the first console user.\n  username: %s\n  password: %s\nThis password is shown only once.\n\n", u.Username, password)
	} else {
		fmt.Fprintf(stdout, "Created the first console user %s.\n", u.Username)
	}
	return nil
}

// run serves the process's role until ctx is cancelled, then shuts down gracefully.
func (a *app) run(ctx context.Context) error {
	defer a.close()
	g, ctx := errgroup.WithContext(ctx)
	runWeb := a.role == "all" || a.role == "web"
	runWorker := a.role == "all" || a.role == "worker"
	runScheduler := a.role == "all" || a.role == "scheduler"

	if runWorker {
		reg := channels.NewRegistry(a.sim)
		send := tasks.NewSender(a.store, reg, a.log, a.cfg.SendTimeout)
		send.Limiter = tasks.NewLimiter(a.rdb)
		send.Limiter.Margin = a.limitMargin
		send.Limiter.Replicas = a.red.AdmissionReplicas()
		send.Metrics = tasks.NewMetrics(a.reg)
		send.Stats = a.stats
		sweep := a.sweeper()
		srv, mux := tasks.NewWorker(a.red.Asynq(), tasks.WorkerOptions{Concurrency: a.cfg.WorkerConcurrency,
			TaskCheckInterval: a.cfg.TaskCheckInterval, Log: a.log}, send, sweep)
		if err := srv.Start(mux); err != nil {
			return fmt.Errorf("serve: start worker: %w", err)
		}
		// Leases are renewed until the worker has finished its tasks, not just until
		// the stop signal.
		beat, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
		go send.KeepLeases(beat)
		g.Go(func() error { <-ctx.Done(); srv.Shutdown(); stopBeat(); return nil })
	}
	if runScheduler {
		sch, err := tasks.NewScheduler(a.red.Asynq(), a.log)
		if err != nil {
			return err
		}
		if err := sch.Start(); err != nil {
			return fmt.Errorf("serve: start scheduler: %w", err)
		}
		if err := tasks.SweepNow(ctx, a.enq.Client()); err != nil {
			a.log.Warn("initial sweep not enqueued", "error", err)
		}
		g.Go(func() error { <-ctx.Done(); sch.Shutdown(); return nil })
	}
	// Every role serves HTTP on HERALD_ADDR: the console and API with the web role, and
	// /healthz, /readyz and /metrics only otherwise. /metrics may also have a listener of
	// its own (HERALD_METRICS_ADDR).
	h := &handlers.Handlers{Store: a.store, Log: a.log, Stats: a.stats, Inspector: a.insp,
		Dispatch: &dispatch.Dispatcher{Store: a.store, Enqueuer: a.enq, Log: a.log, Location: a.cfg.Location, Stats: a.stats,
			Accounts: a.store.NewAccountCache(5 * time.Second)},
		PingRedis: func(context.Context) error { return a.enq.Ping() },
		Limiter:   tasks.NewLimiter(a.rdb),
		Channels:  channels.NewRegistry(a.sim),
	}
	statsDone := make(chan struct{})
	go func() { a.stats.Run(ctx, time.Second, a.log); close(statsDone) }()
	defer func() { <-statsDone }()
	opts := web.Options{Location: a.cfg.Location, Log: a.log, Redis: a.red.Asynq(),
		Metrics: web.NewMetrics(a.reg, a.insp, a.store, a.log), MetricsToken: a.cfg.MetricsToken}
	var handler http.Handler
	if runWeb {
		sessions := web.NewSessions(a.cfg.SessionSecret, a.store, a.cfg.SessionIdle)
		h.Sessions = sessions
		var closeHandler func() error
		handler, closeHandler = web.NewHandler(h, sessions, opts)
		defer closeHandler()
	} else {
		handler = web.NewOpsHandler(h, opts)
	}
	a.http = web.NewServer(a.cfg.Addr, handler)
	ln := a.listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.cfg.Addr); err != nil {
			return fmt.Errorf("serve: listen on %s (HERALD_ADDR): %w", a.cfg.Addr, err)
		}
	}
	if a.cfg.MetricsAddr != "" {
		metricsLn, err := net.Listen("tcp", a.cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve: listen on %s (HERALD_METRICS_ADDR): %w", a.cfg.MetricsAddr, err)
		}
		a.log.Info("serving metrics", "url", "http://"+metricsLn.Addr().String()+"/metrics")
		serveHTTP(ctx, g, web.NewServer(a.cfg.MetricsAddr, web.NewMetricsHandler(opts)), metricsLn)
	}
	a.log.Info("listening", "url", "http://"+ln.Addr().String()+"/", "console", runWeb)
	serveHTTP(ctx, g, a.http, ln)
	a.log.Info("herald started", "role", a.role, "embedded", a.cfg.Embedded())
	return g.Wait()
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

// sweeper returns the sweeper of this process.
func (a *app) sweeper() *tasks.Sweeper {
	return &tasks.Sweeper{Store: a.store, Enqueuer: a.enq, Inspector: a.insp, Log: a.log, Grace: a.sweepGrace}
}

func (a *app) close() {
	if a.insp != nil {
		a.insp.Close()
	}
	if a.enq != nil {
		a.enq.Close()
	}
	if a.insp != nil {
		a.insp.Close()
	}
	if a.rdb != nil {
		a.rdb.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	a.store.Close()
}
