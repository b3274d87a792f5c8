package channels

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// Registry builds and caches one Sender per account. An account edited since its sender
// was built gets a new one.
type Registry struct {
	sandbox Sender

	mu      sync.Mutex
	senders map[int64]cachedSender
}

type cachedSender struct {
	name      string // the account's
	updatedAt time.Time
	sender    Sender
}

// NewRegistry returns a registry; sandbox is the sender behind the sandbox platform, the
// in-process simulator (nil disables that platform). A sandbox that is also a Prober
// answers the connection test.
func NewRegistry(sandbox Sender) *Registry {
	return &Registry{sandbox: sandbox, senders: map[int64]cachedSender{}}
}

// Sender returns the sender for an account.
func (r *Registry) Sender(a Account) (Sender, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.senders[a.ID]
	if ok && old.updatedAt.Equal(a.UpdatedAt) {
		return old.sender, nil
	}
	s, err := r.build(a)
	if err != nil {
		return nil, err
	}
	r.senders[a.ID] = cachedSender{name: a.Name, updatedAt: a.UpdatedAt, sender: s}
	if ok {
		// The account was edited: the old sender's open sessions (email) go, so nothing
		// is sent any more with settings that changed.
		go closeSender(old.sender)
	}
	return s, nil
}

// Close ends what every sender holds open (email sessions, with QUIT). Senders asked
// for later open again.
func (r *Registry) Close() {
	r.mu.Lock()
	senders := r.senders
	r.senders = map[int64]cachedSender{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range senders {
		wg.Go(func() { closeSender(c.sender) })
	}
	wg.Wait()
}

// SMTPPools reports the session pool of every email account this registry has a sender
// for, by account name.
func (r *Registry) SMTPPools() []SMTPPoolStats {
	r.mu.Lock()
	var out []SMTPPoolStats
	for _, c := range r.senders {
		if e, ok := c.sender.(*Email); ok {
			st := e.pool.stats()
			st.Account = c.name
			out = append(out, st)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b SMTPPoolStats) int { return cmp.Compare(a.Account, b.Account) })
	return out
}

// closeSender closes a sender that holds something open.
func closeSender(s Sender) {
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
}

// build constructs the adapter for an account, after checking its config as it is
// checked at save time: a sender is never built from settings that could not be saved.
func (r *Registry) build(a Account) (Sender, error) {
	p, ok := platforms[a.Platform]
	if !ok {
		return nil, &problemError{prefix: "channels: account " + a.Name + ": ", note: note("channels.probe.no_adapter", "Platform", a.Platform)}
	}
	if err := ValidateConfig(a.Platform, a.Config, a.AllowPrivateNetwork); err != nil {
		return nil, fmt.Errorf("channels: account %s: %w", a.Name, err)
	}
	return p.build(r, a)
}
