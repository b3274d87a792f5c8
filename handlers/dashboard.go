package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"herald/alert"
	"herald/models"
	"herald/recall"
	"herald/sending"
	"herald/views"
)

// Dashboard shows the live operations view.
func (h *Handlers) Dashboard(c *gin.Context) {
	d, err := h.dashboard(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Me = CurrentUser(c).Username
	render(c, http.StatusOK, views.DashboardPage(page(c, tr(c, "title.dashboard"), "dashboard"), d))
}

// DashboardLive renders the self-refreshing part of the dashboard (an htmx partial).
func (h *Handlers) DashboardLive(c *gin.Context) {
	d, err := h.dashboard(c.Request.Context())
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Me = CurrentUser(c).Username
	render(c, http.StatusOK, views.DashboardLive(d))
}

// chartMinutes is the span of the throughput chart.
const chartMinutes = 60

// dashboard gathers the dashboard from running counters and indexes only: per-minute
// rollups (message_stats), index range counts (the waiting ones bounded by
// waitingScan) and Redis, never a count of the whole messages table, so it stays fast
// with millions of rows.
func (h *Handlers) dashboard(ctx context.Context) (views.Dashboard, error) {
	now := time.Now()
	local := now.In(h.Location)
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, h.Location)
	chartFrom := now.Add(-(chartMinutes - 1) * time.Minute).Truncate(time.Minute)
	d := views.Dashboard{Now: now}

	since := midnight
	if chartFrom.Before(since) {
		since = chartFrom
	}
	stats, err := h.Store.StatsSince(ctx, since)
	if err != nil {
		return d, err
	}
	for _, s := range stats {
		if !s.Minute.Before(midnight.UTC()) {
			d.Created += s.Created
			d.Sent += s.Sent
			d.Failed += s.Failed
			d.Stopped += s.Stopped
			d.Cancelled += s.Cancelled
		}
	}
	d.Chart = views.NewChart(stats, chartFrom, chartMinutes)
	if d.Sending, err = h.Store.CountSending(ctx); err != nil {
		return d, err
	}
	if d.OldestDue, err = h.Store.OldestDue(ctx); err != nil {
		return d, err
	}
	if d.Failures, err = h.Store.RecentFailures(ctx, 10); err != nil {
		return d, err
	}
	if d.Awaiting, err = h.Store.Intake().BatchesAwaitingApproval(ctx, 20); err != nil {
		return d, err
	}
	if d.AwaitingRecalls, err = recall.Of(h.Store).RecallRequestsAwaiting(ctx, time.Now(), 20); err != nil {
		return d, err
	}
	if d.Batches, err = h.Store.RecentBatches(ctx, 10); err != nil {
		return d, err
	}
	if d.OpenAlerts, err = alert.Of(h.Store).CountOpenAlerts(ctx); err != nil {
		return d, err
	}
	if d.UnroutedAlerts, err = alert.Of(h.Store).CountUnroutedAlerts(ctx); err != nil {
		return d, err
	}
	d.Queues, d.QueuesError = h.queues()
	accounts, err := h.Store.Sending().Accounts(ctx)
	if err != nil {
		return d, err
	}
	if d.Waiting, err = h.waiting(ctx, now, accounts); err != nil {
		return d, err
	}
	for _, a := range accounts {
		row := views.AccountRow{Name: a.Name, Platform: a.Platform, Enabled: a.Enabled, Healthy: a.Healthy, HealthNote: a.HealthNote}
		usage, err := h.Limiter.AccountUsage(ctx, &a)
		if err != nil {
			row.UsageError = err.Error()
		}
		for _, u := range usage {
			row.Usage = append(row.Usage, views.UsageRow{Window: u.Window, Used: u.Used, Limit: u.Limit})
		}
		d.Accounts = append(d.Accounts, row)
	}
	return d, nil
}

// waitingScan bounds the messages the dashboard's waiting counts look at: an index
// range of pending and failed messages, read every 2 s, stays quick however large the
// backlog (the counts then say "at least").
const waitingScan = 5000

// waiting counts the messages waiting and why, the throttled ones per account.
func (h *Handlers) waiting(ctx context.Context, now time.Time, accounts []sending.Account) (views.Waiting, error) {
	counts, capped, err := h.Store.CountWaiting(ctx, now, waitingScan)
	if err != nil {
		return views.Waiting{}, err
	}
	var w views.Waiting
	if capped {
		w.Capped = waitingScan
	}
	throttled := map[int64]int{}
	for _, c := range counts {
		switch c.Reason {
		case models.WaitScheduled:
			w.Scheduled += c.N
		case models.WaitQuietHours:
			w.QuietHours += c.N
		case models.WaitApproval:
			w.Approval += c.N
		case models.WaitHeld:
			w.Held += c.N
		case models.WaitDigest:
			w.Digest += c.N
		case models.WaitThrottled:
			throttled[c.AccountID] += c.N
		}
	}
	for _, a := range accounts {
		if n := throttled[a.ID]; n > 0 {
			w.Throttled = append(w.Throttled, views.AccountWaiting{Account: a.Name, N: n})
		}
	}
	return w, nil
}

// queues reads each priority queue's depth and latency.
func (h *Handlers) queues() ([]views.QueueRow, string) {
	var out []views.QueueRow
	for _, q := range h.QueueDepths() {
		out = append(out, views.QueueRow(q))
	}
	if err := h.PingRedis(context.Background()); err != nil {
		return out, err.Error()
	}
	return out, ""
}
