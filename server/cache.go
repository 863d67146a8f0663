package server

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/shardwise/shardwise/allocation"
)

// DefaultResponseCacheBytes bounds the serialized responses the server keeps
// when Options.ResponseCacheBytes is zero. Every per-collector body of 100k
// Kubernetes targets with 42 labels each takes ~276 MB as JSON, ~11 MB as
// kept (compressed, see body); small bodies are kept as they are, and 1,000
// collectors × 200 jobs of 100k targets took 111 MB (benchmarks/README.md).
// A cache smaller than what collectors poll each interval would evict each
// body before its next poll, so the default leaves room above that.
const DefaultResponseCacheBytes = 512 << 20

// entryOverhead is what one cache entry costs beyond its body bytes: the
// entry, the body struct, its entity tag and the map slot, rounded up.
const entryOverhead = 256

// cacheKey names a cached body: the http_sd array of one allocation.Slice
// (job empty, version the slice's Version), or the whole-job object served
// without collector_id (job set, version the snapshot's generation).
type cacheKey struct {
	version uint64
	job     string
}

// cacheEntry is one cached body and what it was built from. Versions and
// generations of different Allocators collide (the program replaces its
// allocator on a configuration change), so a hit also requires the very
// same *Slice, or the very same snapshot for whole-job bodies.
type cacheEntry struct {
	body  *body
	size  int64
	slice *allocation.Slice                 // slice bodies
	snap  weak.Pointer[allocation.Snapshot] // whole-job bodies; weak, so the cache does not keep snapshots alive
	used  atomic.Uint64                     // the cache's clock at the last use
}

// bodyCache holds serialized responses, bounded in bytes. Hits take the
// read lock only and stamp the entry with a logical clock; when an insert
// takes the total past maxBytes, the least recently used entries are
// evicted down to lowWater, so evictions are paid in batches.
//
// Entries whose slice no live snapshot refers to any more are also swept
// once the cache holds twice as many entries as the last sweep found live,
// so memory is returned without waiting for the byte bound.
type bodyCache struct {
	maxBytes int64
	m        *metrics
	clock    atomic.Uint64

	mu      sync.RWMutex // guards entries, bytes and live
	entries map[cacheKey]*cacheEntry
	bytes   int64
	live    int // live entries found by the last sweep
}

func newBodyCache(maxBytes int64, m *metrics) *bodyCache {
	return &bodyCache{maxBytes: maxBytes, m: m, entries: map[cacheKey]*cacheEntry{}}
}

// lookup returns the cached body under k if valid reports it was built from
// the current input, stamping it as used.
func (c *bodyCache) lookup(k cacheKey, valid func(*cacheEntry) bool) *body {
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	if e == nil || !valid(e) {
		return nil
	}
	e.used.Store(c.clock.Add(1))
	c.m.cacheHits.Inc()
	return e.body
}

// slice returns the response for sl, a non-empty slice of snap, serializing
// it on a miss.
func (c *bodyCache) slice(snap *allocation.Snapshot, sl *allocation.Slice) *body {
	k := cacheKey{version: sl.Version}
	valid := func(e *cacheEntry) bool { return e.slice == sl }
	if b := c.lookup(k, valid); b != nil {
		return b
	}
	c.m.cacheMiss.Inc()
	b := encode(sliceSize(sl), func(b []byte) []byte { return appendSlice(b, sl) })
	return c.insert(snap, k, &cacheEntry{body: b, slice: sl}, valid)
}

// job returns the whole-job response of snap, building it with build on a
// miss.
func (c *bodyCache) job(snap *allocation.Snapshot, job string, build func([]byte) []byte) *body {
	k := cacheKey{version: snap.Generation(), job: job}
	ref := weak.Make(snap)
	valid := func(e *cacheEntry) bool { return e.slice == nil && e.snap == ref }
	if b := c.lookup(k, valid); b != nil {
		return b
	}
	c.m.cacheMiss.Inc()
	return c.insert(snap, k, &cacheEntry{body: encode(0, build), snap: ref}, valid)
}

// insert stores e under k unless a concurrent request stored a valid entry
// first, and returns the body to serve. A body larger than the whole bound
// is served but not kept.
func (c *bodyCache) insert(snap *allocation.Snapshot, k cacheKey, e *cacheEntry, valid func(*cacheEntry) bool) *body {
	e.size = int64(e.body.stored()) + entryOverhead
	if e.size > c.maxBytes {
		return e.body
	}
	e.used.Store(c.clock.Add(1))

	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		if valid(old) {
			return old.body // a concurrent request built it first
		}
		c.remove(k, old)
	}
	if n := len(c.entries); n >= 2*c.live+1024 {
		c.sweep(snap)
	}
	c.entries[k] = e
	c.bytes += e.size
	if c.bytes > c.maxBytes {
		c.evict()
	}
	c.m.cacheSize.Set(float64(len(c.entries)))
	c.m.cacheBytes.Set(float64(c.bytes))
	return e.body
}

// remove deletes one entry. c.mu must be held.
func (c *bodyCache) remove(k cacheKey, e *cacheEntry) {
	delete(c.entries, k)
	c.bytes -= e.size
}

// lowWater is the fill an eviction brings the cache down to: 7/8 of the
// bound, so a full cache evicts in batches rather than on every insert.
func (c *bodyCache) lowWater() int64 { return c.maxBytes - c.maxBytes/8 }

// evict drops the least recently used entries until the cache is at its low
// water mark. c.mu must be held.
func (c *bodyCache) evict() {
	type aged struct {
		k    cacheKey
		e    *cacheEntry
		used uint64
	}
	all := make([]aged, 0, len(c.entries))
	for k, e := range c.entries {
		all = append(all, aged{k, e, e.used.Load()})
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	n := 0
	for _, a := range all {
		if c.bytes <= c.lowWater() {
			break
		}
		c.remove(a.k, a.e)
		n++
	}
	c.m.cacheEvictions.Add(float64(n))
}

// sweep drops the entries snap does not refer to: slices no collector of
// snap holds, whole-job bodies of other snapshots. c.mu must be held.
func (c *bodyCache) sweep(snap *allocation.Snapshot) {
	live := make(map[uint64]struct{}, c.live)
	for _, col := range snap.Collectors() {
		for _, job := range snap.Jobs() {
			if sl := snap.Slice(col, job); sl != nil {
				live[sl.Version] = struct{}{}
			}
		}
	}
	ref := weak.Make(snap)
	for k, e := range c.entries {
		keep := false
		if e.slice != nil {
			_, keep = live[k.version]
		} else {
			keep = e.snap == ref
		}
		if !keep {
			c.remove(k, e)
		}
	}
	c.live = len(c.entries)
}

// stats returns the number of entries and the bytes they hold.
func (c *bodyCache) stats() (entries int, bytes int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries), c.bytes
}
