// Command operator reconciles OpenTelemetryCollector, TargetAllocator and
// OpAMPBridge resources into sharded collector fleets. It only parses flags, builds the
// logger and wires the reconcilers into a controller-runtime manager.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/shardwise/shardwise/internal/clientgo"
	ctrlpkg "github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/version"
)

func main() { os.Exit(run()) }

// options are the operator's flags.
type options struct {
	metricsAddr          string
	probeAddr            string
	leaderElect          bool
	leaderElectionNS     string
	collectorImage       string
	targetAllocatorImage string
	watchNamespace       string
	concurrency          int
	clusterWideGrants    bool
	webhook              webhookOptions
	// opampBridgeImage and opampBridgeClusterWide configure OpAMPBridges.
	opampBridgeImage       string
	opampBridgeClusterWide []string
	// log is the logging set-up; JSON unless --log-format says otherwise.
	log log.Options
}

func parseFlags(args []string) (options, error) {
	o := options{log: log.Options{Format: log.FormatJSON}}
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the metrics endpoint; 0 disables it.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace of the leader election Lease; default $POD_NAMESPACE, else the pod's namespace when in a cluster.")
	fs.StringVar(&o.collectorImage, "collector-image", "otel/opentelemetry-collector-contrib:0.165.0", "Collector image for resources that name none.")
	fs.StringVar(&o.targetAllocatorImage, "target-allocator-image", version.Image("allocator"), "Allocator image (cmd/allocator) for resources that name none.")
	fs.StringVar(&o.watchNamespace, "watch-namespace", "", "Reconcile only this namespace; empty means all.")
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "Reconciles of one kind that run at once.")
	fs.BoolVar(&o.clusterWideGrants, "allow-cluster-wide-grants", false,
		"Let the operator grant a target allocator permissions outside its own namespace (prometheusCR without allowNamespaces, "+
			"other namespaces in allowNamespaces or secretNamespaces). Off, such allocators are refused; see README, Security model.")
	o.webhook.addFlags(fs)
	fs.StringVar(&o.opampBridgeImage, "opamp-bridge-image", version.Image("opamp-bridge"), "OpAMP bridge image (cmd/opamp-bridge) for OpAMPBridges that name none.")
	fs.Func("opamp-bridge-cluster-wide-namespaces", "Comma-separated namespaces whose OpAMPBridges may manage collectors in every namespace (a ClusterRole); elsewhere a bridge gets a Role in its own namespace.", func(v string) error {
		for _, ns := range strings.Split(v, ",") {
			if ns = strings.TrimSpace(ns); ns != "" {
				o.opampBridgeClusterWide = append(o.opampBridgeClusterWide, ns)
			}
		}
		return nil
	})
	o.log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.concurrency < 1 {
		return o, errors.New("--max-concurrent-reconciles must be at least 1")
	}
	if err := o.webhook.validate(); err != nil {
		return o, err
	}
	return o, nil
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "operator: %v\n", err)
		return 2
	}
	logger, err := log.Setup(os.Stderr, &o.log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "operator: %v\n", err)
		return 2
	}
	// controller-runtime and the reconcilers (log.FromContext) log through
	// the same handler as klog.
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	if err := serve(ctrl.SetupSignalHandler(), o); err != nil {
		logger.Error("operator stopped", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, o options) error {
	scheme, err := ctrlpkg.NewScheme()
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "shardwise-operator.opentelemetry.io",
		LeaderElectionNamespace: o.leaderElectionNS,
		WebhookServer:           o.webhook.server(),
	}
	// Only the operator's own objects of the owned kinds are cached.
	mgrOpts.Cache = cache.Options{ByObject: ctrlpkg.CacheByObject()}
	if o.watchNamespace != "" {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{o.watchNamespace: {}}
	}
	// Before any client exists: see clientgo.DisableWatchList.
	clientgo.DisableWatchList()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	settings := manifests.Settings{
		CollectorImage: o.collectorImage, TargetAllocatorImage: o.targetAllocatorImage,
		AllowClusterWideGrants: o.clusterWideGrants,
	}
	recorder := mgr.GetEventRecorder("shardwise-operator")
	copts := controller.Options{MaxConcurrentReconciles: o.concurrency}
	if err := (&ctrlpkg.CollectorReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: recorder, Settings: settings, PodReader: mgr.GetAPIReader()}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("set up collector reconciler: %w", err)
	}
	if err := (&ctrlpkg.TargetAllocatorReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: recorder, Settings: settings}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("set up target allocator reconciler: %w", err)
	}
	if err := setupWebhooks(mgr, o.webhook, o.collectorImage); err != nil {
		return fmt.Errorf("set up webhooks: %w", err)
	}
	if err := (&ctrlpkg.OpAMPBridgeReconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: recorder, Image: o.opampBridgeImage, ClusterWideNamespaces: o.opampBridgeClusterWide}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("set up opamp bridge reconciler: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}
