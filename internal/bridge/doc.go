// Package bridge is the OpAMP bridge: an OpAMP agent (opamp-go client) that
// stands for the OpenTelemetryCollectors labelled for it.
//
// It reports each labelled collector as one entry of its effective
// configuration, keyed "<namespace>/<name>", and the health of the
// collectors' pods on a heartbeat. When the server sends a remote
// configuration and AcceptsRemoteConfig is on, it creates or updates the
// named collectors and deletes the collectors it created that the
// configuration no longer names.
//
// Invariants: a remote configuration is applied whole or not at all as far
// as validation can tell (every entry is parsed, checked against
// componentsAllowed and the label rules, and dry-run on the API server
// before anything is written); a collector labelled
// opentelemetry.io/opamp-reporting=true is never modified; nothing the
// server sends crashes the bridge: what cannot be applied is reported back
// as a FAILED remote config status with the reason.
package bridge
