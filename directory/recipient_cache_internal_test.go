package directory

import (
	"context"
	"testing"
	"time"
)

// A read that began before the cache was cleared must not put what it read back: it
// may predate the change that cleared it.
func TestRecipientCacheDropsReadsBegunBeforeAClear(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	c := newRecipientCache(func() time.Time { return now })
	version := int64(7)
	read := func(context.Context) (int64, error) { return version, nil }
	ctx := context.Background()
	held := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.byExt)
	}

	for _, tt := range []struct {
		name  string
		clear func()
	}{
		{"cleared by a change here", c.forget},
		{"cleared by a change elsewhere", func() {
			version++
			now = now.Add(RecipientCacheCheck)
			if _, err := c.current(ctx, read); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		gen, err := c.current(ctx, read)
		if err != nil {
			t.Fatal(err)
		}
		tt.clear()
		c.keep(gen, now, []Recipient{{ID: 1, ExternalID: "E1"}})
		if n := held(); n != 0 {
			t.Errorf("%s: a read begun before it filled the cache (%d held)", tt.name, n)
		}
		gen, err = c.current(ctx, read)
		if err != nil {
			t.Fatal(err)
		}
		c.keep(gen, now, []Recipient{{ID: 1, ExternalID: "E1"}})
		if n := held(); n != 1 {
			t.Errorf("%s: a read begun after it: %d held, want 1", tt.name, n)
		}
		c.forget()
	}
}
