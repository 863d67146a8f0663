// Package allocator is the allocator program: it loads and watches the config file,
// runs discovery, feeds the allocator, serves the result and keeps metrics.
// cmd/allocator only parses flags and calls Run.
//
// Data flow: discovery.Manager sends target updates and the job set; the
// collector source sends collector sets; one loop owns the allocator and
// applies both, so the allocator never sees concurrent writers. The server reads
// the latest snapshot without waiting. A bad config reload is logged and
// counted, and the last good config stays in force.
package allocator
