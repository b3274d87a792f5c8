package delivery_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"herald/delivery"
)

func TestLimitWarnings(t *testing.T) {
	tests := []struct {
		name   string
		limits delivery.Limits
		want   []string
	}{
		{"no limits", delivery.Limits{}, nil},
		{"consistent", delivery.Limits{PerSecond: 10, PerMinute: 300, PerHour: 10000, PerDay: 100000,
			PerRecipientPerMinute: 5, PerRecipientPerDay: 100}, nil},
		{"longer window below shorter", delivery.Limits{PerSecond: 20, PerMinute: 10},
			[]string{"per_second (20) can never be reached: per_minute is 10"}},
		{"longer window above what the shorter allows", delivery.Limits{PerSecond: 1, PerHour: 5000},
			[]string{"per_hour (5000) can never be reached: per_second (1) allows at most 3600 an hour"}},
		{"tightest bound is named", delivery.Limits{PerSecond: 50, PerMinute: 30, PerHour: 20},
			[]string{
				"per_second (50) can never be reached: per_hour is 20",
				"per_minute (30) can never be reached: per_hour is 20",
			}},
		{"per-recipient above the account", delivery.Limits{PerMinute: 10, PerRecipientPerMinute: 20},
			[]string{"per_recipient_per_minute (20) can never be reached: per_minute is 10"}},
		{"per-recipient windows among themselves", delivery.Limits{PerRecipientPerMinute: 1, PerRecipientPerDay: 2000},
			[]string{"per_recipient_per_day (2000) can never be reached: per_recipient_per_minute (1) allows at most 1440 a day"}},
		{"per-recipient limits never bound the account", delivery.Limits{PerMinute: 100, PerRecipientPerMinute: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, delivery.LimitWarnings(tt.limits)); diff != "" {
				t.Errorf("LimitWarnings(%+v) (-want +got):\n%s", tt.limits, diff)
			}
		})
	}
}
