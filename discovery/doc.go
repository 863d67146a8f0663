// Package discovery turns configuration and the cluster into the allocator's
// inputs: scrape configs, targets (after the relabel filter, with their
// identity) and collectors.
//
// Prometheus service discovery feeds target groups per job; each job's
// relabel_configs decide which targets exist; prometheus-operator resources
// become scrape configs through prometheus-operator's own generator; collector
// pods (or a static list) become the collector set. On failure discovery keeps
// the last good state and never publishes a partial target set.
package discovery
