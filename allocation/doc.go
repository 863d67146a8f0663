// Package allocation assigns scrape targets to collectors.
//
// It is pure: targets and collectors go in, an immutable [Snapshot] comes out.
// It imports nothing from Kubernetes, HTTP or service discovery, so it can be
// tested exhaustively and benchmarked in isolation.
//
// Invariants, for every strategy:
//   - with at least one eligible collector, every target is assigned to exactly
//     one collector (per-node without a fallback may leave targets unassigned,
//     and counts them);
//   - the assignment is a pure function of (target set, collector set, options):
//     it does not depend on insertion order or history, so two allocators fed
//     the same inputs, or one allocator before and after a restart, agree
//     (least-weighted is the exception: it is sticky by design);
//   - a published Snapshot never changes; readers never wait on a rebalance.
package allocation
