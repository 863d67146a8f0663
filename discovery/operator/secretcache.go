package operator

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The Secrets and ConfigMaps that prometheus-operator resources reference
// are read with `get`, through a cache whose entries live for one
// CRDPollInterval. Why not an informer: the operator grants the allocator
// only `get` on Secrets, per namespace (an informer needs list and watch,
// which would let it read every Secret of the namespace); and a generation
// runs on every resource change, so without a cache each one would cost a
// GET per referenced Secret against the client's default 5 QPS. With it, a
// burst of generations costs one GET per Secret, and a rotated Secret is
// seen within one CRDPollInterval (the periodic generation re-reads).
// NotFound is cached too (a Secret created later is seen within the
// interval); other errors are not.

// objectCache caches get results by namespace/name for ttl.
type objectCache[T any] struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex // guards entries
	entries map[string]cacheEntry[T]
}

type cacheEntry[T any] struct {
	obj *T
	err error // nil or NotFound
	at  time.Time
}

func newObjectCache[T any](ttl time.Duration) *objectCache[T] {
	return &objectCache[T]{ttl: ttl, now: time.Now, entries: map[string]cacheEntry[T]{}}
}

// get returns the cached result for ns/name or calls fetch.
func (c *objectCache[T]) get(ns, name string, fetch func() (*T, error)) (*T, error) {
	key := ns + "/" + name
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.obj, e.err
	}
	obj, err := fetch()
	if err == nil || apierrors.IsNotFound(err) {
		c.mu.Lock()
		c.entries[key] = cacheEntry[T]{obj: obj, err: err, at: now}
		// Drop expired entries, so deleted references do not pile up.
		for k, e := range c.entries {
			if now.Sub(e.at) >= c.ttl {
				delete(c.entries, k)
			}
		}
		c.mu.Unlock()
	}
	return obj, err
}
