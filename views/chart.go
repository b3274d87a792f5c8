package views

import (
	"fmt"
	"strings"
	"time"

	"herald/models"
)

// Chart is a server-rendered SVG line chart of messages per minute.
type Chart struct {
	Width, Height int
	Max           int
	// Empty says no minute of the span had anything sent, failed or stopped.
	Empty    bool
	Sent     string // SVG polyline points
	Failed   string
	Stopped  string
	From, To time.Time
}

const chartW, chartH, chartPad = 720, 160, 4

// NewChart lays out per-minute counts from `from` for `minutes` minutes; minutes with no
// row count as zero.
func NewChart(stats []models.MessageStat, from time.Time, minutes int) Chart {
	from = from.UTC().Truncate(time.Minute)
	byMinute := make(map[time.Time]models.MessageStat, len(stats))
	for _, s := range stats {
		byMinute[s.Minute.UTC()] = s
	}
	c := Chart{Width: chartW, Height: chartH, Max: 1, Empty: true, From: from, To: from.Add(time.Duration(minutes-1) * time.Minute)}
	rows := make([]models.MessageStat, minutes)
	for i := range rows {
		rows[i] = byMinute[from.Add(time.Duration(i)*time.Minute)]
		c.Max = max(c.Max, rows[i].Sent, rows[i].Failed, rows[i].Stopped)
		if rows[i].Sent+rows[i].Failed+rows[i].Stopped > 0 {
			c.Empty = false
		}
	}
	points := func(v func(models.MessageStat) int) string {
		var b strings.Builder
		for i, r := range rows {
			x := float64(i) * float64(chartW) / float64(max(minutes-1, 1))
			y := float64(chartH-chartPad) - float64(v(r))*float64(chartH-2*chartPad)/float64(c.Max)
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		return strings.TrimSpace(b.String())
	}
	c.Sent = points(func(r models.MessageStat) int { return r.Sent })
	c.Failed = points(func(r models.MessageStat) int { return r.Failed })
	c.Stopped = points(func(r models.MessageStat) int { return r.Stopped })
	return c
}
