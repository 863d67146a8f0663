// Package allocatorconfig is the allocator's config file,
// targetallocator.yaml, with the keys and meaning of the OpenTelemetry
// Operator's: what the operator renders and validates and what the allocator
// reads. It imports no part of the allocator's runtime.
//
// File is the whole file, the one type both sides use: the operator fills
// one and renders it (File.Marshal, keys sorted as upstream writes them),
// the allocator reads it (Parse, strict on every key). Its parts are
// Allocator (the allocator's own keys: listen_addr, strategies, https,
// telemetry, ...) and Config (the discovery keys, below).
//
// ParseConfig reads the discovery keys: `config:` (a Prometheus
// configuration, parsed by Prometheus' loader with UTF-8 label-name
// validation, whatever prometheus-operator's init set the global to),
// `filter_strategy`, `prometheus_cr:`, `collector_namespace`,
// `collector_selector`, `collector_not_ready_grace_period` and `collectors:`.
// Other top-level keys are the allocator's own (Keys lists this package's,
// from the field tags, for the caller's unknown-key check); a key of
// prometheus_cr that no field reads is an error naming its path. Errors wrap
// ErrConfig and name the field.
package allocatorconfig
