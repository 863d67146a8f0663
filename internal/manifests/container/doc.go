// Package container builds the collector container, otc-container, for every
// collector mode: the workload modes (Deployment, DaemonSet, StatefulSet) of
// internal/manifests and the sidecar the pod webhook injects
// (internal/sidecar). It owns what the modes must agree on: the ports the
// configuration makes the collector listen on (the receiver port table, port
// names, the merge with spec.ports), the health_check probes and their
// tuning, the environment, the volume mounts, and the one security-context
// policy of every container the operator runs for a tenant.
//
// Invariants: pure functions of the resource and their options, no I/O, no
// Kubernetes client (k8s.io/api and apimachinery only); the same spec gives
// the same ports and probes in every mode; the defaults it fills in never
// make a container the API server or the kubelet refuses.
package container
