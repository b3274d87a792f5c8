// Package app wires one Herald process: it opens the database and Redis once, builds
// every shared part once (the channel registry, the rate limiter, the Asynq inspector
// and enqueuer, the metrics registry), runs the first-start steps, and serves the
// process's role until it is told to stop.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"herald/alert"
	"herald/channels"
	"herald/channels/sandbox"
	"herald/config"
	"herald/dispatch"
	"herald/inbound"
	"herald/internal/logwrite"
	"herald/kernel"
	"herald/models"
	"herald/sending"
	"herald/simulator"
	"herald/tasks"
)

// Roles are the parts a process can play: all of them, or one of the three.
var Roles = []string{"all", "web", "worker", "scheduler"}

// CheckRole says which roles there are when role is not one of them.
func CheckRole(role string) error {
	if !slices.Contains(Roles, role) {
		return fmt.Errorf("serve: --role must be all, web, worker or scheduler, not %q", role)
	}
	return nil
}

// App is one running Herald process.
type App struct {
	Config *config.Config
	Role   string
	Log    *slog.Logger
	Store  *models.Store
	// sendStore is the worker's sender's own pool on MySQL (see SenderStore); nil until
	// a worker starts, or on SQLite.
	sendStore *models.Store
	// Redis is where every Redis connection is made from; EmbeddedRedis is the
	// in-process server behind it on a single node, nil otherwise.
	Redis         *tasks.Redis
	EmbeddedRedis *tasks.EmbeddedRedis
	// RDB is the go-redis connection of the rate limiter.
	RDB     redis.UniversalClient
	Limiter *tasks.Limiter
	// Accounts caches account lookups for intake and the worker alike.
	Accounts  *sending.AccountCache
	Inspector *asynq.Inspector
	Enqueuer  *tasks.Enqueuer
	Channels  *channels.Registry
	Stats     *models.Stats
	Metrics   *prometheus.Registry
	// Callbacks delivers status events to the API keys' callback URLs.
	Callbacks *tasks.Callbacks
	// Dispatch is the process's intake, for the console and the API alike.
	Dispatch *dispatch.Dispatcher
	// AckLinks signs and opens the acknowledgment links of the alerts' notices.
	AckLinks *alert.AckLinks
	// Sim is the in-process simulator behind sandbox accounts.
	Sim *simulator.Simulator

	// Listener, when set before Run, is where the HTTP server listens instead of
	// HERALD_ADDR (tests use a random port).
	Listener net.Listener
	// SweepGrace is how long past due a message must be before the sweeper re-enqueues it.
	SweepGrace time.Duration
}

// New opens the database and Redis, runs the first-start steps (see Prepare) and builds
// the process's shared parts. stdout receives the first admin's generated password.
func New(ctx context.Context, cfg *config.Config, role string, log *slog.Logger, stdout io.Writer) (*App, error) {
	if err := CheckRole(role); err != nil {
		return nil, err
	}
	if role != "all" && (cfg.Embedded() || cfg.EmbeddedRedis()) {
		return nil, fmt.Errorf("serve: --role %s needs HERALD_MYSQL_DSN and HERALD_REDIS_URL: split roles share one MySQL and one Redis", role)
	}
	store, err := OpenStore(cfg)
	if err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Role: role, Log: log, Store: store, SweepGrace: tasks.DefaultSweepGrace}
	if cfg.Knobs.Set() {
		log.Warn("HERALD_TEST_KNOBS is set: built-in waits are shortened, for tests only", "knobs", cfg.Knobs.String())
		if cfg.Knobs.SweepGraceSet {
			a.SweepGrace = cfg.Knobs.SweepGrace
		}
	}
	if cfg.Redis != nil {
		a.Redis = tasks.NewRedis(cfg.Redis)
	}
	if err := Prepare(ctx, store, cfg, role, log, stdout); err != nil {
		a.Close()
		return nil, err
	}
	if cfg.EmbeddedRedis() {
		if a.EmbeddedRedis, err = tasks.StartEmbeddedRedis(cfg.RedisPassword); err != nil {
			a.Close()
			return nil, err
		}
		if a.Redis, err = tasks.ParseRedisURL(a.EmbeddedRedis.URL()); err != nil {
			a.Close()
			return nil, err
		}
	}
	// One connection per worker goroutine at most, so a limiter check never queues
	// for a connection (the default pool is 10 per CPU).
	a.RDB = a.Redis.NewClient(cfg.WorkerConcurrency + 10)
	a.Accounts = a.Store.Sending().NewAccountCache(tasks.AccountCacheTTL)
	if a.Limiter, err = tasks.NewLimiter(tasks.LimiterConfig{Redis: a.Redis, Client: a.RDB}); err != nil {
		a.Close()
		return nil, err
	}
	a.Enqueuer = tasks.NewEnqueuer(a.Redis.Asynq())
	if err := a.Enqueuer.Ping(); err != nil {
		a.Close()
		return nil, fmt.Errorf("serve: cannot reach Redis at %s (HERALD_REDIS_URL): %w", a.Redis.Where(), err)
	}
	a.Inspector = asynq.NewInspector(a.Redis.Asynq())
	a.Callbacks = &tasks.Callbacks{Store: a.Store, Enqueuer: a.Enqueuer, Log: a.Log}
	a.Sim = simulator.New(simulator.Faults{})
	a.Channels = channels.NewRegistry(sandbox.New(a.Sim))
	a.Stats = store.NewStats()
	// Alert notices carry links to HERALD_PUBLIC_URL, signed under HERALD_SECRET_KEY.
	a.AckLinks = alert.NewAckLinks(cfg.PublicURL, cfg.SecretKey, cfg.SecretKeyPrevious)
	a.Metrics = prometheus.NewRegistry()
	a.Metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if a.Dispatch, err = dispatch.NewDispatcher(dispatch.Config{Store: a.Store, Enqueuer: a.Enqueuer, Log: a.Log,
		Location: cfg.Location, Stats: a.Stats, Accounts: a.Accounts, Callbacks: a.Callbacks, Channels: a.Channels,
		AckLinks: a.AckLinks, AckObserver: tasks.NewAlertMetrics(a.Metrics, a.Store), StepWait: cfg.Knobs.StepWait,
		InboundObserver: inboundMetrics(a.Metrics)}); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// OpenStore opens the database cfg names. Its error names the setting and the server.
func OpenStore(cfg *config.Config) (*models.Store, error) { return openStore(cfg, 0) }

// openStore is OpenStore with a MySQL pool of at most conns connections (0: the
// default).
func openStore(cfg *config.Config, conns int) (*models.Store, error) {
	store, err := models.Open(kernel.Options{MySQLDSN: cfg.MySQLDSN, DataDir: cfg.DataDir, SecretKey: cfg.SecretKey, PreviousSecretKey: cfg.SecretKeyPrevious, MaxOpenConns: conns})
	if err == nil {
		return store, nil
	}
	if cfg.MySQLDSN == "" {
		return nil, fmt.Errorf("cannot open the database in %s (HERALD_DATA_DIR): %w", cfg.DataDir, err)
	}
	where := "the server"
	if d, perr := mysql.ParseDSN(cfg.MySQLDSN); perr == nil {
		where = d.Addr + "/" + d.DBName
	}
	return nil, fmt.Errorf("cannot open the database at %s (HERALD_MYSQL_DSN): %w", where, err)
}

// SenderStore is the store the worker's sender claims and records messages through. On
// MySQL it is a pool of its own of HERALD_WORKER_DB_CONNS connections, so a worker
// draining a backlog as fast as it can never has more statements than that in the
// database at once, and the intake's transactions (in this process or another) are not
// left queueing behind its claims and finishes. On SQLite it is the process's store:
// one writer serves the whole process.
func (a *App) SenderStore() (*models.Store, error) {
	if a.Config.Embedded() {
		return a.Store, nil
	}
	if a.sendStore == nil {
		s, err := openStore(a.Config, a.Config.WorkerDBConns)
		if err != nil {
			return nil, err
		}
		a.sendStore = s
	}
	return a.sendStore, nil
}

// Sweeper returns the process's sweeper.
func (a *App) Sweeper() (*tasks.Sweeper, error) {
	// Each full sweep (once a minute) sends the duty reminder and the
	// scheduled reports that are due, and tallies the dates that have closed for the
	// interruptions report.
	scheduled := dispatch.Reports(a.Dispatch, a.Config.DefaultLanguage, a.Config.PublicURL)
	remind := func(ctx context.Context) error {
		_, err := a.Dispatch.RemindIfDue(ctx)
		_, rerr := scheduled.SendDue(ctx)
		_, terr := scheduled.TallyClosedDays(ctx)
		return errors.Join(err, rerr, terr)
	}
	return tasks.NewSweeper(tasks.SweeperConfig{Store: a.Store, Enqueuer: a.Enqueuer, Inspector: a.Inspector, Log: a.Log,
		Grace: a.SweepGrace, Remind: remind, Callbacks: a.Callbacks, FallBack: a.fallBack})
}

// fallBack moves the due fallback chains on, for the sender and the recovery pass.
func (a *App) fallBack(ctx context.Context) error {
	_, err := a.Dispatch.FallBack(ctx)
	return err
}

// Close releases what New opened; Run calls it when it returns.
func (a *App) Close() {
	if a.Channels != nil {
		a.Channels.Close() // email sessions end with QUIT
	}
	if a.Inspector != nil {
		a.Inspector.Close()
	}
	if a.Enqueuer != nil {
		a.Enqueuer.Close()
	}
	if a.RDB != nil {
		a.RDB.Close()
	}
	if a.EmbeddedRedis != nil {
		a.EmbeddedRedis.Close()
	}
	if a.sendStore != nil {
		a.sendStore.Close()
	}
	a.Store.Close()
}

// NewLogger logs text on a single node, where a person reads it, and JSON in
// production mode, where a collector does. Information lines reach w after LogDelay,
// several in one write (logwrite); warnings and errors at once. flush writes what is
// held: call it before the process exits.
func NewLogger(cfg *config.Config, w io.Writer) (log *slog.Logger, flush func()) {
	out := logwrite.NewWriter(w, LogDelay)
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var format slog.Handler = slog.NewJSONHandler(out, opts)
	if cfg.Embedded() {
		format = slog.NewTextHandler(out, opts)
	}
	h := logwrite.NewHandler(format, out)
	return slog.New(h), func() { _ = h.Flush() }
}

// LogDelay is how long an information line is held before it is written. A worker logs
// one for every provider call; written one at a time they cost the worker and whatever
// reads its log a system call each, more than the rest of the line (docs/benchmarks.md).
const LogDelay = 2 * time.Millisecond

// RedisLog carries go-redis's own messages (failed dials, Sentinel switching masters)
// into the process log, for redis.SetLogger.
type RedisLog struct{ Log *slog.Logger }

// Printf implements go-redis's logger.
func (l RedisLog) Printf(ctx context.Context, format string, v ...any) {
	l.Log.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
}

// inboundMetrics registers herald_inbound_events_total with reg and counts into it.
func inboundMetrics(reg prometheus.Registerer) inbound.Observer {
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "herald_inbound_events_total",
		Help: "Events monitoring tools posted to integrations, by integration and what became of them (unauthorized: refused for its token).",
	}, []string{"integration", "outcome"})
	reg.MustRegister(events)
	return func(integration, outcome string) { events.WithLabelValues(integration, outcome).Inc() }
}
