// Package logwrite gathers a busy process's log lines into fewer writes.
//
// A worker logs a line for every provider call, thousands a second. Written one system
// call each, the lines cost the worker a write per message, and whatever reads its
// output (journald, a container runtime, a terminal) a wake-up and a read per message:
// together more than the rest of the line. A Writer holds lines for its delay and
// writes what gathered in one call. Lines at warning level and above are written at
// once, with everything before them, so a problem's line never waits and the order of
// lines is kept.
//
// What a Writer holds is lost if the process dies without flushing it (a kill, a crash
// of the runtime): the information lines of the last delay, or a little more when a
// saturated CPU makes the timed flush wait its turn. Handler.Flush writes them at a
// normal exit.
package logwrite

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Writer holds what is written to it for a delay, then writes it to the
// underlying writer in one call. It is safe for concurrent use.
type Writer struct {
	w     io.Writer
	delay time.Duration

	mu  sync.Mutex
	buf []byte
	// armed: a flush is due within the delay.
	armed bool
	timer *time.Timer
	// err is what the last write that no caller saw returned, for the next caller.
	err error
}

// maxHeld is how many bytes a Writer holds before it writes them at once.
const maxHeld = 64 << 10

// NewWriter returns a Writer over w that holds lines for delay.
func NewWriter(w io.Writer, delay time.Duration) *Writer {
	lw := &Writer{w: w, delay: delay}
	lw.timer = time.AfterFunc(time.Hour, lw.flushLater)
	lw.timer.Stop()
	return lw
}

// Write implements io.Writer: p is written within the delay. The error, if any, is that
// of an earlier write that failed, or of this one when p filled the buffer.
func (lw *Writer) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, p...)
	if len(lw.buf) >= maxHeld {
		if err := lw.flushLocked(); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if !lw.armed {
		lw.armed = true
		lw.timer.Reset(lw.delay)
	}
	err := lw.err
	lw.err = nil
	return len(p), err
}

// Flush writes everything held now.
func (lw *Writer) Flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	err := lw.flushLocked()
	if err == nil {
		err, lw.err = lw.err, nil
	}
	return err
}

// flushLater is the timed flush: its error waits for the next caller.
func (lw *Writer) flushLater() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.flushLocked(); err != nil {
		lw.err = err
	}
}

// flushLocked writes what is held; lw.mu is held.
func (lw *Writer) flushLocked() error {
	if lw.armed {
		lw.armed = false
		lw.timer.Stop()
	}
	if len(lw.buf) == 0 {
		return nil
	}
	_, err := lw.w.Write(lw.buf)
	lw.buf = lw.buf[:0]
	if cap(lw.buf) > 4*maxHeld {
		lw.buf = nil
	}
	return err
}

// Handler is a slog.Handler that writes through a Writer: it formats each record with
// the handler it wraps, and flushes the Writer after a record at warning level or above.
type Handler struct {
	inner slog.Handler
	out   *Writer
}

// NewHandler returns a Handler over inner, which must write to out.
func NewHandler(inner slog.Handler, out *Writer) *Handler {
	return &Handler{inner: inner, out: out}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.inner.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.out.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{inner: h.inner.WithAttrs(attrs), out: h.out}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{inner: h.inner.WithGroup(name), out: h.out}
}

// Flush writes every line held.
func (h *Handler) Flush() error { return h.out.Flush() }
