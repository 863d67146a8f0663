// Package benchmarks holds the rebalance-stability and throughput suite:
// scenarios over the real allocation package, comparison baselines run in the
// same process, the full pipeline benchmark and the report with plots.
package benchmarks
