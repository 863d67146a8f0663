// Package manifests builds the desired Kubernetes objects for a collector and
// its target allocator. Builders are pure functions of the custom resources and
// operator settings: no client, no I/O.
package manifests
