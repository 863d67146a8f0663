// Package allocproc runs the allocator binary as a child process for the
// benchmarks that measure it as a whole program (cmd/loadtest and
// internal/cluster): it starts the binary on a config file, copies its output
// to a log, reads the address it listens on from its status-page log line,
// and stops it with SIGTERM, so that a graceful exit is part of the run.
package allocproc
