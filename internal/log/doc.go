// Package log builds the one log/slog logger of each shardwise binary
// (cmd/allocator, cmd/operator, cmd/opamp-bridge) from the same flags, and
// routes client-go's klog into it, so that a process writes a single stream
// in a single format.
//
// Each binary registers the flags with [Options.AddFlags] on its own flag set
// and, after parsing, calls [Setup] once before it starts anything that logs.
// The operator also hands the logger's handler to controller-runtime with
// logr.FromSlogHandler, so reconcilers' logr calls land in the same handler.
//
// The flags are --log-level (debug, info, warn, error) and --log-format (text,
// json). The upstream OpenTelemetry Operator's programs take
// controller-runtime's zap flags instead; --zap-log-level, --zap-encoder and
// --zap-devel are mapped onto ours (which win when both are given), and
// --zap-stacktrace-level and --zap-time-encoding are accepted and ignored, so
// that arguments written for the upstream programs keep working.
package log
