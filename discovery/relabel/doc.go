// Package relabel turns a job's target groups into allocation targets: it
// applies the job's relabel_configs (the relabel filter) and computes each
// target's identity, and it says which __meta_* labels a job's rules read so
// that service discovery can drop the others early.
//
// # Contract
//
//   - Filter: ApplyConfig sets the jobs; Process takes the groups of every
//     job, as Prometheus' discovery manager sends them, and returns the jobs
//     whose target set changed, each with its complete set sorted by Hash (an
//     empty slice: no targets). A Filter has one owner goroutine; it
//     parallelises internally. What it returns is immutable.
//   - Identity: Target.Hash is xxhash of the job and the relabeled labels
//     without __meta_*, after seeding job, __scheme__, __metrics_path__,
//     __scrape_interval__, __scrape_timeout__ and __param_* from the scrape
//     config where absent. Targets of one job with the same identity are one
//     target; the newest discovered labels are served. As in Prometheus, a
//     label with an empty value is no label. Target.Node is the node the
//     discovered labels name (per-node allocation).
//   - Trimming: ReadLabels(rules) is every __meta_* label the rules can read;
//     a Trimmer of it drops the others (and keeps the node labels) without
//     changing what the rules produce.
//
// Relabeling uses Prometheus' relabel.ProcessBuilder, except for the rules
// prometheus-operator generates most (copies, constants, a literal prefix
// cut, keep/drop on literal values, lowercase, keepequal and their kin),
// which run without a regular expression on the discovered label sets as
// sent, with identical results (property-tested against ProcessBuilder).
// prometheus-operator's sharding rules (__tmp_hash, $(SHARD)) are removed
// before filtering so every target is seen; the configs served keep them
// (the collector substitutes $(SHARD)).
package relabel
