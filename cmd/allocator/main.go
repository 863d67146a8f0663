// Command allocator runs Prometheus and prometheus-operator service discovery
// and serves each collector its share of the scrape targets, in the format
// the OpenTelemetry Collector's Prometheus receiver polls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/shardwise/shardwise/internal/app"
)

func main() { os.Exit(run(os.Args[1:], os.Stderr)) }

// run parses flags and runs the allocator; it returns the process exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("allocator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config-file", "/conf/targetallocator.yaml", "The allocator config file (the keys of the OpenTelemetry Operator's targetallocator.yaml).")
	var flags app.Flags
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
	logLevel := fs.String("log-level", "info", "Log level: debug, info, warn or error.")
	logFormat := fs.String("log-format", "text", "Log format: text or json.")
	// The upstream allocator's logging flags (controller-runtime's zap), so
	// that spec.args written for it work: mapped onto --log-level and
	// --log-format, which win when both are given.
	var z zapFlags
	fs.StringVar(&z.level, "zap-log-level", "", "Upstream compatibility: debug, info, error, panic or a verbosity number; sets --log-level.")
	fs.StringVar(&z.encoder, "zap-encoder", "", "Upstream compatibility: console or json; sets --log-format (console is text).")
	fs.BoolVar(&z.devel, "zap-devel", false, "Upstream compatibility: debug level and text format unless set otherwise.")
	fs.String("zap-stacktrace-level", "", "Upstream compatibility: accepted and ignored.")
	fs.String("zap-time-encoding", "", "Upstream compatibility: accepted and ignored.")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := z.apply(set, logLevel, logFormat); err != nil {
		fmt.Fprintf(stderr, "allocator: %v\n", err)
		return 2
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "allocator: --log-level: %v\n", err)
		return 2
	}
	hopts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler
	switch strings.ToLower(*logFormat) {
	case "text":
		handler = slog.NewTextHandler(stderr, hopts)
	case "json":
		handler = slog.NewJSONHandler(stderr, hopts)
	default:
		fmt.Fprintf(stderr, "allocator: --log-format: want text or json, got %q\n", *logFormat)
		return 2
	}
	log := slog.New(handler)

	// gin's mode is process-global; the server changes no gin globals itself.
	gin.SetMode(gin.ReleaseMode)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := app.Run(ctx, app.Options{
		ConfigFile: *configFile,
		Flags:      flags,
		Logger:     log,
		Registry:   reg,
		Ready: func(addr string) {
			log.Info("serving; status page at " + statusURL(addr))
		},
	})
	if err != nil {
		log.Error("allocator stopped", "err", err)
		return 1
	}
	log.Info("allocator stopped")
	return 0
}

// zapFlags are the upstream allocator's logging flags.
type zapFlags struct {
	level, encoder string
	devel          bool
}

// apply maps the zap flags that were set onto level and format, unless
// --log-level or --log-format were set themselves.
func (z zapFlags) apply(set map[string]bool, level, format *string) error {
	if !set["log-level"] {
		switch {
		case set["zap-log-level"]:
			switch strings.ToLower(z.level) {
			case "debug":
				*level = "debug"
			case "info", "0":
				*level = "info"
			case "error", "panic":
				*level = "error"
			default:
				if n, err := strconv.Atoi(z.level); err == nil && n > 0 {
					*level = "debug" // a verbosity above 0 is zap's debug and beyond
					break
				}
				return fmt.Errorf("--zap-log-level: want debug, info, error, panic or a number, got %q", z.level)
			}
		case z.devel:
			*level = "debug"
		}
	}
	if !set["log-format"] {
		switch {
		case set["zap-encoder"]:
			switch strings.ToLower(z.encoder) {
			case "console":
				*format = "text"
			case "json":
				*format = "json"
			default:
				return fmt.Errorf("--zap-encoder: want console or json, got %q", z.encoder)
			}
		case set["zap-devel"] && z.devel:
			*format = "text"
		}
	}
	return nil
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
