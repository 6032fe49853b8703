package db

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commerce-integration/commerce/domain"
)

// A process keeps what authenticating a key read (the key, its scopes and,
// when it is on, the route's add-on) for up to keyCacheTTL, so that a call
// with a key in use costs no statement at all (its rate limit is spent from
// the process's lease, keylease.go). What is kept is dropped as soon as it
// may be wrong: a trigger announces every change to a key's hash, scopes or
// revocation and to an organisation's add-ons on keyChangesChannel
// (migration 028), and a connection of the process listens to it. While
// that connection is not listening nothing is kept, and every call reads
// the key, as it would without the cache. A change made through this
// process (RevokeAPIKey, SetAddon) drops what it kept before the change is
// answered.
const (
	keyChangesChannel = "commerce_key_changes"
	keyCacheTTL       = 5 * time.Second
	// keyCacheMax bounds the keys kept (a few hundred bytes each); past it,
	// calls with further keys read them every time until the next sweep.
	keyCacheMax = 10_000
	// keyListenRetry is the wait before listening again after the
	// connection failed.
	keyListenRetry = time.Second
)

type keyCacheKey struct {
	hash  string
	addon domain.Addon
}

type cachedKey struct {
	auth  KeyAuth
	until time.Time
}

type keyCache struct {
	d   *DB
	ttl time.Duration

	mu sync.Mutex
	m  map[keyCacheKey]cachedKey
	// gen counts the times what is kept was dropped: a read that began
	// before a drop is not kept.
	gen  atomic.Uint64
	live atomic.Bool

	start   sync.Once
	stopped sync.Once
	cancel  context.CancelFunc
	done    chan struct{}
}

func newKeyCache(d *DB) *keyCache {
	return &keyCache{d: d, ttl: keyCacheTTL, m: map[keyCacheKey]cachedKey{}, done: make(chan struct{})}
}

// get returns what was kept for (hash, addon), if it is still good.
func (c *keyCache) get(hash []byte, addon domain.Addon) (KeyAuth, bool) {
	c.start.Do(c.listen)
	if !c.live.Load() {
		return KeyAuth{}, false
	}
	c.mu.Lock()
	e, ok := c.m[keyCacheKey{string(hash), addon}]
	c.mu.Unlock()
	if !ok || !time.Now().Before(e.until) {
		return KeyAuth{}, false
	}
	return e.auth, true
}

// generation is what put is handed back: taken before the read it keeps.
func (c *keyCache) generation() uint64 { return c.gen.Load() }

// put keeps what a read that began at generation gen found, unless what is
// kept was dropped since (or is not being kept at all). A route's add-on
// that is off is not kept: whether its rows are held (which opens its
// reads) changes with rows no trigger watches, so such calls read it.
func (c *keyCache) put(hash []byte, addon domain.Addon, a KeyAuth, gen uint64) {
	if addon != "" && !a.AddonOn {
		return
	}
	a.Rate = RateDecision{}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live.Load() || c.gen.Load() != gen || len(c.m) >= keyCacheMax {
		return
	}
	c.m[keyCacheKey{string(hash), addon}] = cachedKey{auth: a, until: time.Now().Add(c.ttl)}
}

// drop forgets everything kept.
func (c *keyCache) drop() {
	c.mu.Lock()
	clear(c.m)
	c.gen.Add(1)
	c.mu.Unlock()
}

// sweep forgets what has expired.
func (c *keyCache) sweep() {
	now := time.Now()
	c.mu.Lock()
	for k, e := range c.m {
		if !now.Before(e.until) {
			delete(c.m, k)
		}
	}
	c.mu.Unlock()
}

// listen starts the connection that listens for changes; until it does,
// and whenever it has failed, nothing is kept.
func (c *keyCache) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		for {
			ready := func() {
				c.live.Store(true)
				c.drop() // what was read before now may have missed a change
			}
			_ = c.d.listenReady(ctx, keyChangesChannel, c.ttl, ready, func(string) { c.drop() }, c.sweep)
			c.live.Store(false)
			c.drop()
			select {
			case <-ctx.Done():
				return
			case <-time.After(keyListenRetry):
			}
		}
	}()
}

// close stops listening, if it started.
func (c *keyCache) close() {
	c.stopped.Do(func() {
		started := true
		c.start.Do(func() { started = false })
		if started {
			c.cancel()
			<-c.done
		}
	})
}
