package directory

import (
	"context"
	"fmt"
	"herald/kernel"
	"sync"
	"time"

	"gorm.io/gorm"
)

// RecipientCacheCheck is how often a process asks the database whether the staff
// directory changed, and so the longest a change made by another process goes unseen by
// the cached lookups. A change made through the same store is seen at once.
const RecipientCacheCheck = time.Second

// RecipientCacheMaxAge is how long a cached recipient is used even when the directory's
// counter has not moved: a change written to the database by anything but Herald (an
// administrator's UPDATE) does not count, and is seen after this long.
const RecipientCacheMaxAge = time.Minute

// recipientCacheSize bounds the cache, in people: a directory larger than this is read
// again from the start whenever the cache fills.
const recipientCacheSize = 50_000

// Reading the whole directory at once (a fill) costs the database about what a few
// hundred lookups of one person cost, and more for a larger directory; the cache fills
// itself once this many lookups since the last fill missed, or a sixteenth of the people
// that fill read, whichever is more. A steady flow of requests then costs a fill a
// minute (RecipientCacheMaxAge) and after each change of the directory, instead of a
// lookup per person; a trickle costs what it did.
const (
	fillAfterMisses = 256
	fillShare       = 16
)

// recipientsCounter is the change_counters row of the recipients table.
const recipientsCounter = "recipients"

// countRecipientChange adds one to the recipients' counter inside tx, the transaction
// that changes them.
func countRecipientChange(tx *gorm.DB) error {
	err := tx.Model(&kernel.ChangeCounter{}).Where("name = ?", recipientsCounter).
		Update("version", gorm.Expr("version + 1")).Error
	if err != nil {
		return fmt.Errorf("directory: count recipient change: %w", err)
	}
	return nil
}

// recipientsVersion reads the recipients' counter.
func (s *Staff) recipientsVersion(ctx context.Context) (int64, error) {
	var c kernel.ChangeCounter
	if err := s.k.Reader(ctx).Where("name = ?", recipientsCounter).Limit(1).Find(&c).Error; err != nil {
		return 0, fmt.Errorf("directory: read recipients' counter: %w", err)
	}
	return c.Version, nil
}

// changeRecipients runs fn, which changes recipients, in one transaction that also
// counts the change, then drops what this store's cache holds: after an error too, as a
// commit that failed to answer may still have been made.
func (s *Staff) changeRecipients(ctx context.Context, fn func(tx *gorm.DB) error) error {
	err := s.k.Tx(ctx, func(tx *gorm.DB) error {
		if err := fn(tx); err != nil {
			return err
		}
		return countRecipientChange(tx)
	})
	s.people.forget()
	return err
}

// recipientCache keeps the recipients the intake looked up, by external id and by id,
// while the recipients' counter in the database stays where it was when they were read.
// People it does not hold are read from the database, so a person added anywhere is
// found at once; only changes to people already held wait for the next check.
type recipientCache struct {
	now func() time.Time

	mu sync.Mutex
	// generation counts clears: a read begun before one does not fill the cache.
	generation uint64
	version    int64     // the counter the entries were read under
	checked    time.Time // when the counter was last read; zero: never
	checking   bool      // a lookup is reading the counter
	byExt      map[string]*cachedRecipient
	byID       map[int64]*cachedRecipient
	// misses counts the lookups that read the database since the last fill began;
	// filling is set while one runs, lastFill is how many people it read.
	misses   int
	filling  bool
	lastFill int
}

// cachedRecipient is a person as the database gave it at a time.
type cachedRecipient struct {
	Recipient
	read time.Time
}

func newRecipientCache(now func() time.Time) *recipientCache {
	return &recipientCache{now: now, byExt: map[string]*cachedRecipient{}, byID: map[int64]*cachedRecipient{}}
}

// current reads the counter when the last read is RecipientCacheCheck old, and clears
// the cache when the counter moved. It returns the generation a read that starts now
// must fill. While one lookup reads the counter, the others go on with what the cache
// holds.
func (c *recipientCache) current(ctx context.Context, version func(context.Context) (int64, error)) (uint64, error) {
	c.mu.Lock()
	now := c.now()
	if c.checking || (!c.checked.IsZero() && now.Sub(c.checked) < RecipientCacheCheck) {
		defer c.mu.Unlock()
		return c.generation, nil
	}
	c.checking = true
	c.mu.Unlock()

	v, err := version(ctx)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.checking = false
	if err != nil {
		return 0, err
	}
	// Before the first check the entries belong to no known counter: people read while
	// it ran may predate a change it counted.
	if c.checked.IsZero() || v != c.version {
		c.clear()
		c.version = v
	}
	c.checked = now
	return c.generation, nil
}

// clear drops every entry; the caller holds mu.
func (c *recipientCache) clear() {
	c.generation++
	clear(c.byExt)
	clear(c.byID)
}

// forget drops every entry, after this process changed recipients.
func (c *recipientCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
}

// keep adds people read at a time under generation, unless the cache was cleared since.
func (c *recipientCache) keep(generation uint64, read time.Time, people []Recipient) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if generation != c.generation {
		return
	}
	if len(c.byID)+len(people) > recipientCacheSize {
		c.clear()
		return
	}
	c.put(read, people)
}

// put adds people read at a time; the caller holds mu.
func (c *recipientCache) put(read time.Time, people []Recipient) {
	for _, p := range people {
		entry := &cachedRecipient{Recipient: p, read: read}
		c.byExt[p.ExternalID] = entry
		c.byID[p.ID] = entry
	}
}

// missed counts a lookup that read the database, and reports whether the lookups
// missed often enough since the last fill for the cache to fill itself now; then the
// caller must run the fill.
func (c *recipientCache) missed() (fill bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.misses++
	if c.filling || c.misses < max(fillAfterMisses, c.lastFill/fillShare) {
		return false
	}
	c.filling, c.misses = true, 0
	return true
}

// fillRecipientCache reads the whole directory, if it fits the cache, and keeps it
// under the generation current when the read began.
func (s *Staff) fillRecipientCache(ctx context.Context) {
	c := s.people
	defer func() {
		c.mu.Lock()
		c.filling = false
		c.mu.Unlock()
	}()
	generation, err := c.current(ctx, s.recipientsVersion)
	if err != nil {
		return // the lookups go on reading what they miss
	}
	c.mu.Lock()
	read := c.now()
	c.mu.Unlock()
	var all []Recipient
	if err := s.k.Reader(ctx).Order("id").Limit(recipientCacheSize + 1).Find(&all).Error; err != nil {
		return
	}
	c.mu.Lock()
	c.lastFill = len(all)
	if len(all) > recipientCacheSize {
		// Too large to hold: lookups go on one by one, and try again much later.
		c.lastFill = recipientCacheSize * fillShare
		c.mu.Unlock()
		return
	}
	if generation == c.generation {
		// Every entry is read again: the directory replaces them in one step, so that
		// no lookup finds the cache empty meanwhile.
		c.clear()
		c.put(read, all)
	}
	c.mu.Unlock()
}

// cachedRecipients answers a lookup of keys from index where it can and reads the rest
// with read, keeping what it read. Lookups that keep missing fill the cache with the
// whole directory, in the background.
func cachedRecipients[K comparable](ctx context.Context, s *Staff, keys []K,
	index func(*recipientCache) map[K]*cachedRecipient, read func(context.Context, []K) ([]Recipient, error)) ([]Recipient, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	c := s.people
	generation, err := c.current(ctx, s.recipientsVersion)
	if err != nil {
		return nil, err
	}
	var out []Recipient
	var missing []K
	c.mu.Lock()
	held, now := index(c), c.now()
	for _, k := range keys {
		if p, ok := held[k]; ok && now.Sub(p.read) < RecipientCacheMaxAge {
			out = append(out, p.Recipient)
		} else {
			missing = append(missing, k)
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	if c.missed() {
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			s.fillRecipientCache(ctx)
		}()
	}
	found, err := read(ctx, missing)
	if err != nil {
		return nil, err
	}
	c.keep(generation, now, found)
	return append(out, found...), nil
}

// CachedRecipientsByExternalIDs is RecipientsByExternalIDs from this process's cache of
// the directory: a change made through this store is seen at once, one made by another
// process within RecipientCacheCheck. The intake looks people up this way; pages that
// show or change people read the database.
func (s *Staff) CachedRecipientsByExternalIDs(ctx context.Context, ids []string) ([]Recipient, error) {
	return cachedRecipients(ctx, s, ids, func(c *recipientCache) map[string]*cachedRecipient { return c.byExt }, s.RecipientsByExternalIDs)
}

// CachedRecipientsByIDs is RecipientsByIDs from the same cache.
func (s *Staff) CachedRecipientsByIDs(ctx context.Context, ids []int64) ([]Recipient, error) {
	return cachedRecipients(ctx, s, ids, func(c *recipientCache) map[int64]*cachedRecipient { return c.byID }, s.RecipientsByIDs)
}
