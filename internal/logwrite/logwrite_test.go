package logwrite

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorder keeps each Write it is given apart.
type recorder struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.writes)
}

func (r *recorder) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// TestWriterHoldsLinesUntilFlushed: lines wait (here, for a delay longer than the test)
// and leave together, in order, in one write.
func TestWriterHoldsLinesUntilFlushed(t *testing.T) {
	var under recorder
	lw := NewWriter(&under, time.Hour)
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if _, err := lw.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := under.all(); len(got) != 0 {
		t.Fatalf("written before the delay or a flush: %q", got)
	}
	if err := lw.Flush(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"one\ntwo\nthree\n"}, under.all()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if err := lw.Flush(); err != nil || len(under.all()) != 1 {
		t.Errorf("a flush with nothing held wrote %q (err %v)", under.all(), err)
	}
}

// TestWriterWritesWithinTheDelay: with nobody flushing, held lines are written when the
// delay has passed.
func TestWriterWritesWithinTheDelay(t *testing.T) {
	var under recorder
	lw := NewWriter(&under, 5*time.Millisecond)
	lw.Write([]byte("a\n"))
	lw.Write([]byte("b\n"))
	deadline := time.Now().Add(5 * time.Second)
	for len(under.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing written 5 s after lines with a 5 ms delay")
		}
		time.Sleep(time.Millisecond)
	}
	lw.Write([]byte("c\n"))
	for len(under.all()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the line after the first write never followed: %q", under.all())
		}
		time.Sleep(time.Millisecond)
	}
	if got := strings.Join(under.all(), ""); got != "a\nb\nc\n" {
		t.Errorf("written %q, want the three lines in order", got)
	}
}

// TestWriterWritesAFullBufferAtOnce: a writer holds at most maxHeld bytes.
func TestWriterWritesAFullBufferAtOnce(t *testing.T) {
	var under recorder
	lw := NewWriter(&under, time.Hour)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range maxHeld / len(line) {
		lw.Write(line)
	}
	got := under.all()
	if len(got) != 1 || len(got[0]) != maxHeld {
		t.Fatalf("after %d bytes: %d writes; want one of all of them", maxHeld, len(got))
	}
}

// TestWriterReportsAFailedWrite: the error of a write no caller waited for reaches the
// next caller, once.
func TestWriterReportsAFailedWrite(t *testing.T) {
	broken := errors.New("disk full")
	var under recorder
	lw := NewWriter(&under, time.Hour)
	lw.Write([]byte("lost\n"))
	under.fail(broken)
	if err := lw.Flush(); !errors.Is(err, broken) {
		t.Fatalf("Flush = %v, want %v", err, broken)
	}
	under.fail(nil)
	if _, err := lw.Write([]byte("next\n")); err != nil {
		t.Errorf("the error was reported twice: %v", err)
	}

	// A timed write's failure is told to the next Write.
	lw = NewWriter(&under, time.Millisecond)
	under.fail(broken)
	lw.Write([]byte("first\n"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		lw.mu.Lock()
		failed := lw.err != nil
		lw.mu.Unlock()
		if failed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the timed write never happened")
		}
		time.Sleep(time.Millisecond)
	}
	under.fail(nil)
	if _, err := lw.Write([]byte("second\n")); !errors.Is(err, broken) {
		t.Errorf("Write after a failed timed write = %v, want %v", err, broken)
	}
}

// TestHandlerWritesWhatSlogsHandlerWrites: the lines are the wrapped handler's, with
// attributes and groups; records below the level are dropped; a warning is written at
// once, after the information lines held before it.
func TestHandlerWritesWhatSlogsHandlerWrites(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	for _, tc := range []struct {
		name   string
		format func(io.Writer) slog.Handler
	}{
		{"json", func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, opts) }},
		{"text", func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, opts) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var plain bytes.Buffer
			var under recorder
			out := NewWriter(&under, time.Hour)
			held := NewHandler(tc.format(out), out)
			for _, h := range []slog.Handler{tc.format(&plain), held} {
				l := slog.New(h).With("role", "worker")
				for _, r := range []struct {
					level slog.Level
					msg   string
					args  []any
				}{
					{slog.LevelInfo, "attempt", []any{"message_id", "m1", "duration_ms", 12}},
					{slog.LevelDebug, "not shown", nil},
					{slog.LevelInfo, "attempt", []any{"message_id", "m2", "duration_ms", 9}},
					{slog.LevelWarn, "enqueue failed", []any{"error", "redis: connection refused"}},
					{slog.LevelInfo, "attempt", []any{"message_id", "m3", "duration_ms", 3}},
				} {
					if !l.Enabled(context.Background(), r.level) {
						continue
					}
					rec := slog.NewRecord(at, r.level, r.msg, 0)
					rec.Add(r.args...)
					if err := l.WithGroup("sweep").With("pass", 3).Handler().Handle(context.Background(), rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			lines := strings.SplitAfter(plain.String(), "\n")
			if len(lines) != 5 || lines[4] != "" {
				t.Fatalf("slog's handler wrote %q", plain.String())
			}
			// The warning took the two lines before it along; the last waits.
			if diff := cmp.Diff([]string{lines[0] + lines[1] + lines[2]}, under.all()); diff != "" {
				t.Errorf("writes before the flush (-want +got):\n%s", diff)
			}
			held.Flush()
			if diff := cmp.Diff([]string{lines[0] + lines[1] + lines[2], lines[3]}, under.all()); diff != "" {
				t.Errorf("writes after the flush (-want +got):\n%s", diff)
			}
		})
	}
}
