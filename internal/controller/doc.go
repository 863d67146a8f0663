// Package controller holds the operator's reconcilers. Each reconcile reads the
// full desired state, builds the objects with package manifests, writes only
// what differs, prunes what is no longer desired and records status.
//
// A pass that reaches a verdict (ready, degraded, invalid input, failed
// apply) records it the same way for every kind, through one helper
// (status.go): the Ready condition, status.observedGeneration, a Warning
// event only when the failure is news, and a status write only on change.
// Objects a namespaced resource cannot own (cluster-scoped RBAC) are kept by
// one helper too (clusterrbac.go), behind a finalizer.
package controller
