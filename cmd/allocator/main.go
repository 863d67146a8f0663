// Command allocator runs Prometheus and prometheus-operator service discovery
// and serves each collector its share of the scrape targets, in the format
// the OpenTelemetry Collector's Prometheus receiver polls.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardwise/shardwise/internal/allocator"
	"github.com/shardwise/shardwise/internal/cli"
	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/version"
	"github.com/shardwise/shardwise/server"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run parses flags and runs the allocator; it returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("allocator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config-file", "/conf/targetallocator.yaml", "The allocator config file (the keys of the OpenTelemetry Operator's targetallocator.yaml).")
	var flags allocator.Flags
	fs.StringVar(&flags.ListenAddr, "listen-addr", "", "The address the HTTP API listens on; overrides listen_addr.")
	fs.StringVar(&flags.KubeConfigPath, "kubeconfig-path", "", "A kubeconfig file; overrides kube_config_file_path (default: $KUBECONFIG, else in-cluster).")
	fs.BoolVar(&flags.PrometheusCR, "enable-prometheus-cr-watcher", false, "Watch ServiceMonitors, PodMonitors, Probes and ScrapeConfigs; sets prometheus_cr.enabled.")
	fs.BoolVar(&flags.HTTPSEnabled, "enable-https-server", false, "Also serve over mutual TLS; sets https.enabled.")
	fs.StringVar(&flags.HTTPSListenAddr, "listen-addr-https", "", "The address of the HTTPS server; overrides https.listen_addr (default :8443).")
	fs.StringVar(&flags.HTTPSCAFile, "https-ca-file", "", "The CA that signs client certificates; overrides https.ca_file_path.")
	fs.StringVar(&flags.HTTPSCertFile, "https-tls-cert-file", "", "The server certificate; overrides https.tls_cert_file_path.")
	fs.StringVar(&flags.HTTPSKeyFile, "https-tls-key-file", "", "The server key; overrides https.tls_key_file_path.")
	fs.BoolVar(&flags.AllowInsecureAuthSecrets, "allow-insecure-auth-secrets", false, "Serve secrets in /scrape_configs to clients without mutual TLS; sets allow_insecure_auth_secrets.")
	fs.BoolVar(&flags.EnablePprof, "enable-pprof", false, "Serve /debug/pprof/ on the HTTP port (off by default); sets enable_pprof.")
	logOpts := log.Options{Format: log.FormatText}
	logOpts.AddFlags(fs)
	printVersion := version.AddFlag(fs)
	parseErr := fs.Parse(args)
	logger, code, done := cli.Start("allocator", parseErr, *printVersion, &logOpts, stdout, stderr)
	if done {
		return code
	}

	// The HTTPS key pair's watcher (controller-runtime's certwatcher) logs
	// through controller-runtime's logger.
	ctrllog.SetLogger(logr.FromSlogHandler(logger.Handler()))

	setMemoryLimit(logger)

	server.SetReleaseMode()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.NewCollector("allocator"))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := allocator.Run(ctx, allocator.Options{
		ConfigFile: *configFile,
		Flags:      flags,
		Logger:     logger,
		Registry:   reg,
		Ready: func(addr string) {
			logger.Info("serving; status page at " + statusURL(addr))
		},
	})
	if err != nil {
		logger.Error("allocator stopped", "err", err)
		return 1
	}
	logger.Info("allocator stopped")
	return 0
}

// statusURL turns a listen address into a URL a person can open.
func statusURL(addr string) string {
	host, port, found := strings.Cut(addr, "]:")
	if found { // [::]:8080
		host = strings.TrimPrefix(host, "[")
	} else if i := strings.LastIndex(addr, ":"); i >= 0 {
		host, port = addr[:i], addr[i+1:]
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "localhost"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + ":" + port + "/"
}

// memoryLimitRatio is the part of the container's memory limit given to the
// Go runtime: the rest is for what the runtime does not count (thread stacks
// outside the heap, memory not yet returned to the kernel, cgo).
const memoryLimitRatio = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit to memoryLimitRatio
// of the container's memory limit (cgroup v1 or v2, read by automemlimit)
// unless GOMEMLIMIT is set, which the runtime reads itself; AUTOMEMLIMIT
// ("off", or a ratio) overrides the ratio. Without a limit the garbage
// collector lets the heap grow to twice the live heap and a pod whose live
// heap is over half its memory limit is killed; with it the collector works
// harder near the limit instead. The allocator's start-up garbage (decoding
// the first lists of a large cluster) is what makes its peak RSS several
// times its live heap (benchmarks/README.md).
func setMemoryLimit(logger *slog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, err := memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case errors.Is(err, memlimit.ErrNoCgroup), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		// Not in a container: no limit to follow.
	case err != nil:
		logger.Warn("could not read the container's memory limit; no Go memory limit set", "err", err)
	case limit < math.MaxInt64:
		logger.Info("Go memory limit set from the container's memory limit", "bytes", limit)
	}
}
