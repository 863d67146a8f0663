// Package sidecar is the pure pod mutator behind collector sidecar injection:
// given a pod, its namespace's metadata, the OpenTelemetryCollector (mode
// sidecar) its sidecar.opentelemetry.io/inject annotation resolves to, the
// pod's owner chain and the operator's settings, it adds the collector
// container otc-container as the upstream OpenTelemetry Operator does
// (pkg/sidecar): the configuration in OTEL_CONFIG read with
// --config=env:OTEL_CONFIG, POD_NAME, the OTEL_RESOURCE_ATTRIBUTES_* downward
// API variables and OTEL_RESOURCE_ATTRIBUTES with the pod's k8s.* attributes,
// as a native sidecar (an init container with restartPolicy Always) when the
// API server supports it, and the label sidecar.opentelemetry.io/injected.
// The collector's pod-level fields go where upstream's sidecar puts them:
// command, envFrom, lifecycle, probe timings, spec.ports merged with the
// inferred ports, volumeMounts and configmaps mounts on the container; its
// volumes, a volume per configmaps entry and its initContainers on the pod.
// It says what it did, or why not, in an Outcome.
//
// Invariants: no Kubernetes client, no I/O (the caller resolves the collector
// and the owner chain); the same input gives the same pod; mutating a mutated
// pod changes nothing; a pod never gets a second container named
// otc-container, and a container of that name the user wrote is never
// replaced or removed.
//
// Where it differs from upstream, on purpose:
//   - "false" removes only a sidecar this package injected (the pod carries
//     the injected label and the container reads OTEL_CONFIG); upstream
//     removes any container named otc-container, the user's own included.
//   - A container named otc-container among the init containers blocks a
//     plain-container injection too (upstream adds a second one, which the API
//     server refuses).
//   - A collector volume or init container whose name the pod already uses,
//     or a volumeMount naming no volume, is reported (result pod-conflict)
//     and nothing injected; upstream appends them and the API server refuses
//     the pod.
//   - The container's security context is the operator's one policy
//     (package container): spec.securityContext with the unset fields of the
//     restricted Pod Security Standard filled in, as the operator's other
//     collectors, so that injection does not make a pod fail a restricted
//     namespace; none that contradicts the pod's (an application pod running
//     as user 0 gets no runAsNonRoot).
//   - Ports, probes, env and mounts come from the builder the workload modes
//     use too (package container), so a spec gives the same container in
//     every mode.
//   - OTEL_RESOURCE_ATTRIBUTES names every owner the caller resolved
//     (StatefulSet, DaemonSet, Job, CronJob too, as upstream's
//     instrumentation does); upstream's sidecar names only the ReplicaSet and
//     Deployment.
package sidecar
