// Command opamp-bridge connects the OpenTelemetryCollectors labelled for it
// to an OpAMP server (see package internal/bridge). It only parses flags,
// builds the logger and the Kubernetes client configuration, and runs the
// bridge and its /healthz endpoint until a signal arrives.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardwise/shardwise/internal/bridge"
	"github.com/shardwise/shardwise/internal/cli"
	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/version"
)

func main() { os.Exit(run()) }

// options are the bridge's flags, named as upstream's.
type options struct {
	configFile        string
	listenAddr        string
	healthListenAddr  string
	heartbeatInterval time.Duration
	name              string
	kubeconfigPath    string
	watchNamespace    string
	log               log.Options
	// printVersion is --version: print the build and exit.
	printVersion bool
}

func parseFlags(args []string) (options, error) {
	o := options{log: log.Options{Format: log.FormatJSON}}
	home, _ := os.UserHomeDir()
	fs := flag.NewFlagSet("opamp-bridge", flag.ContinueOnError)
	fs.StringVar(&o.configFile, "config-file", "/conf/remoteconfiguration.yaml", "The bridge configuration file.")
	fs.StringVar(&o.listenAddr, "listen-addr", "", "Address of the OpAMP server (upstream's proxy) for collectors whose own opamp extension connects to the bridge, e.g. :8080; empty (the default) disables it. Any client that reaches it can connect, so it is off unless asked for (upstream serves it on :8080 by default).")
	fs.StringVar(&o.healthListenAddr, "health-listen-addr", ":8081", "Address of the /healthz and /metrics endpoints.")
	fs.DurationVar(&o.heartbeatInterval, "heartbeat-interval", 30*time.Second, "How often health is sent; 0 disables the heartbeat.")
	fs.StringVar(&o.name, "name", "opamp-bridge", "The bridge's name: collectors labelled opentelemetry.io/opamp-managed=<name> (or true) are managed.")
	fs.StringVar(&o.kubeconfigPath, "kubeconfig-path", filepath.Join(home, ".kube", "config"), "Kubeconfig file; when it does not exist, the in-cluster configuration is used.")
	fs.StringVar(&o.watchNamespace, "watch-namespace", "", "Watch and manage collectors in this namespace only; empty means all namespaces.")
	o.log.AddFlags(fs)
	printVersion := version.AddFlag(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.printVersion = *printVersion; o.printVersion {
		return o, nil
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if o.heartbeatInterval < 0 {
		return o, errors.New("--heartbeat-interval must not be negative")
	}
	return o, nil
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	logger, code, done := cli.Start("opamp-bridge", err, o.printVersion, &o.log, os.Stdout, os.Stderr)
	if done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, o, logger); err != nil {
		logger.Error("bridge stopped", "err", err)
		return 1
	}
	return 0
}

// restConfig loads the kubeconfig file, or the in-cluster configuration
// when there is none, as upstream's bridge does.
func restConfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err == nil {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	return cfg, nil
}

func serve(ctx context.Context, o options, logger *slog.Logger) error {
	cfg, err := bridge.LoadConfig(o.configFile)
	if err != nil {
		return err
	}
	rc, err := restConfig(o.kubeconfigPath)
	if err != nil {
		return err
	}
	b, err := bridge.New(bridge.Options{
		Config:            cfg,
		Identity:          bridge.Identity{Name: o.name, Namespace: os.Getenv("OTELCOL_NAMESPACE"), Version: version.Version},
		WatchNamespace:    o.watchNamespace,
		HeartbeatInterval: o.heartbeatInterval,
		RestConfig:        rc,
		Logger:            logger,
		ListenAddr:        o.listenAddr,
	})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.NewCollector("opamp-bridge"))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.Synced() {
			http.Error(w, "collector watch not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	srv := &http.Server{Addr: o.healthListenAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.healthListenAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.healthListenAddr, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("health server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(gctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	})
	g.Go(func() error { return b.Run(gctx) })
	logger.Info("opamp bridge started", "name", o.name, "endpoint", cfg.Endpoint, "watch-namespace", o.watchNamespace, "version", version.Version)
	return g.Wait()
}
