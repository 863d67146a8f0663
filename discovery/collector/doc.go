// Package collector is the collector set the allocator assigns targets to:
// the collector pods of a namespace (Watcher) or a static list (Static).
//
// # Contract
//
// Watcher.Run may be called once; it returns nil when ctx is done and closes
// the Updates channel when it returns. The first value is the set once the
// pod cache has synced (a list that fails, RBAC say, is reported every
// SyncTimeout, with shardwise_allocator_informer_synced{resource="Pod"} 0,
// and waited for); each later value is the whole set after a change. A slow
// consumer gets the latest set; intermediate ones are skipped. Sets are
// sorted by name and immutable.
//
// Membership keeps history: a ready pod joins; a collector whose pod is not
// ready, terminating or deleted stays for the grace period (a StatefulSet
// rolling restart moves nothing); a pod never a collector joins only once
// ready. With WatcherOptions.DrainTerminating (the allocator's handoff on), a
// collector whose pod is terminating leaves at once as a draining collector
// (allocation.Collector.Draining) and is gone with its pod: its targets move
// while it still scrapes them, so a scale-down or a rolling restart leaves
// no target unscraped. Membership applies the same rules without an API
// server.
package collector
