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
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/shardwise/shardwise/internal/cli"
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
	// watchNamespaces are --watch-namespace's namespaces; none means all.
	watchNamespaces   []string
	concurrency       int
	clusterWideGrants bool
	// crMetrics is --enable-cr-metrics: serve upstream's collector series.
	crMetrics bool
	// componentRBAC is --create-rbac-permissions: grant every collector's
	// components their rights; componentRBACNamespaces are
	// --collector-rbac-namespaces.
	componentRBAC           bool
	componentRBACNamespaces []string
	// grantNamespaces is --target-allocator-cluster-wide-namespaces.
	grantNamespaces []string
	webhook         webhookOptions
	// opampBridgeImage and opampBridgeClusterWide configure OpAMPBridges.
	opampBridgeImage       string
	opampBridgeClusterWide []string
	// log is the logging set-up; JSON unless --log-format says otherwise.
	log log.Options
	// printVersion is --version: print the build and exit.
	printVersion bool
	// upstream are the upstream operator's flags shardwise implements or
	// accepts (upstream.go).
	upstream upstreamOptions
	// uninstall is --uninstall: release the resources' finalizers and exit
	// (the chart's pre-delete hook); uninstallStop is the operator's
	// Deployment to scale to zero first.
	uninstall     bool
	uninstallStop string
	// annotationsFilter is --annotations-filter, compiled.
	annotationsFilter []*regexp.Regexp
	// labelsFilter is --labels-filter, compiled.
	labelsFilter []*regexp.Regexp
}

// parseFlags reads the command line, then upstream's config file and
// environment variables (getenv) for the flags the command line left unset.
func parseFlags(args []string, getenv func(string) (string, bool)) (options, error) {
	o := options{log: log.Options{Format: log.FormatJSON}}
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the metrics endpoint; 0 disables it.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so only one replica reconciles.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", os.Getenv("POD_NAMESPACE"),
		"Namespace of the leader election Lease; default $POD_NAMESPACE, else the pod's namespace when in a cluster.")
	fs.StringVar(&o.collectorImage, "collector-image", defaultCollectorImage, "Collector image for resources that name none (the upstream operator v0.158's default).")
	fs.StringVar(&o.targetAllocatorImage, "target-allocator-image", version.Image("allocator"), "Allocator image (cmd/allocator) for resources that name none.")
	fs.Func("watch-namespace", "Comma-separated namespaces to reconcile; empty means all.", func(v string) error {
		o.watchNamespaces = splitList(v)
		return nil
	})
	fs.IntVar(&o.concurrency, "max-concurrent-reconciles", 4, "Reconciles of one kind that run at once.")
	fs.Func("target-allocator-cluster-wide-namespaces", "Comma-separated namespaces whose TargetAllocators may be granted rights outside their own namespace (prometheusCR without allowNamespaces, other namespaces in allowNamespaces or secretNamespaces); elsewhere such an allocator is refused. Name the platform team's namespaces, not the tenants'.", func(v string) error {
		o.grantNamespaces = append(o.grantNamespaces, splitList(v)...)
		return nil
	})
	fs.BoolVar(&o.clusterWideGrants, "allow-cluster-wide-grants", false,
		"Let the operator grant every TargetAllocator, a tenant's included, rights outside its own namespace (prometheusCR without allowNamespaces, "+
			"other namespaces in allowNamespaces or secretNamespaces). Prefer --target-allocator-cluster-wide-namespaces; see docs/security.md.")
	o.webhook.addFlags(fs)
	fs.StringVar(&o.opampBridgeImage, "opamp-bridge-image", version.Image("opamp-bridge"), "OpAMP bridge image (cmd/opamp-bridge) for OpAMPBridges that name none.")
	fs.Func("opamp-bridge-cluster-wide-namespaces", "Comma-separated namespaces whose OpAMPBridges may manage collectors in every namespace (a ClusterRole); elsewhere a bridge gets a Role in its own namespace.", func(v string) error {
		o.opampBridgeClusterWide = append(o.opampBridgeClusterWide, splitList(v)...)
		return nil
	})
	fs.BoolVar(&o.uninstall, "uninstall", false, "Instead of running: delete the RBAC granted outside their namespaces for TargetAllocators and OpAMPBridges, remove the operator's finalizers from them, and exit (the chart's pre-delete hook runs this, so namespaces can still be deleted once the operator is gone).")
	fs.StringVar(&o.uninstallStop, "uninstall-stop-deployment", "", "With --uninstall: the operator's Deployment, in --leader-election-namespace, to scale to zero before anything is released.")
	fs.Func("annotations-filter", "Regular expressions (repeat the flag, or separate them by commas) of annotation keys of a collector not copied to its pods, as upstream's flag of that name; kubectl's last-applied configuration never is.", appendPatterns(&o.annotationsFilter))
	fs.BoolVar(&o.crMetrics, "enable-cr-metrics", false, "Serve, on the operator's /metrics, upstream's series of the collectors (opentelemetry_collector_info by mode, opentelemetry_collector_receivers/exporters/processors/extensions/connectors by component type), as upstream's flag of that name.")
	fs.BoolVar(&o.componentRBAC, "create-rbac-permissions", false, "Grant the collectors of every namespace the rights their components need (k8sattributes, kubeletstats, k8s_cluster, k8s_events, k8sobjects, resourcedetection, k8s_observer, k8sleaderelector), as upstream's flag of that name; prefer --collector-rbac-namespaces, since whoever may create a collector then gets these cluster-wide reads.")
	fs.Func("collector-rbac-namespaces", "Comma-separated namespaces whose collectors are granted the rights their components need (a ClusterRole per collector); elsewhere a collector reports what it lacks in its ComponentRBAC condition.", func(v string) error {
		o.componentRBACNamespaces = append(o.componentRBACNamespaces, splitList(v)...)
		return nil
	})
	fs.Func("labels-filter", "Regular expressions (repeat the flag, or separate them by commas) of label keys of a collector not copied to the objects built for it (workloads, pods, Services, ConfigMaps, its TargetAllocator), as upstream's flag of that name.", appendPatterns(&o.labelsFilter))
	o.log.AddFlags(fs)
	printVersion := version.AddFlag(fs)
	o.upstream.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := applyFileAndEnv(fs, &o.upstream, getenv); err != nil {
		return o, err
	}
	o.printVersion = *printVersion
	if o.printVersion {
		return o, nil
	}
	if _, err := o.upstream.tlsOptions(); err != nil {
		return o, err
	}
	if _, err := o.upstream.metricsServer(o.metricsAddr, nil); err != nil {
		return o, err
	}
	if o.uninstallStop != "" && o.leaderElectionNS == "" {
		return o, errors.New("--uninstall-stop-deployment needs the operator's namespace: --leader-election-namespace or $POD_NAMESPACE")
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
	o, err := parseFlags(os.Args[1:], os.LookupEnv)
	logger, code, done := cli.Start("operator", err, o.printVersion, &o.log, os.Stdout, os.Stderr)
	if done {
		return code
	}
	// controller-runtime and the reconcilers (log.FromContext) log through
	// the same handler as klog.
	ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
	o.upstream.logUpstream(logger)
	if o.uninstall {
		released, err := uninstall(ctrl.SetupSignalHandler(), o)
		if err != nil {
			logger.Error("uninstall failed", "released", released, "err", err)
			return 1
		}
		logger.Info("uninstall: finalizers released", "resources", released)
		return 0
	}
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
	tlsOpts, err := o.upstream.tlsOptions()
	if err != nil {
		return err
	}
	metricsOpts, err := o.upstream.metricsServer(o.metricsAddr, tlsOpts)
	if err != nil {
		return err
	}
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOpts,
		PprofBindAddress:        o.upstream.pprofAddr,
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "shardwise-operator.opentelemetry.io",
		LeaderElectionNamespace: o.leaderElectionNS,
		WebhookServer:           o.webhook.server(tlsOpts),
	}
	// Only the operator's own objects of the owned kinds are cached.
	mgrOpts.Cache = cache.Options{ByObject: ctrlpkg.CacheByObject()}
	if len(o.watchNamespaces) > 0 {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.watchNamespaces {
			mgrOpts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	// Before any client exists: see clientgo.DisableWatchList.
	clientgo.DisableWatchList()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := metrics.Registry.Register(version.NewCollector("operator")); err != nil {
		return fmt.Errorf("register build info: %w", err)
	}
	if o.crMetrics {
		if err := metrics.Registry.Register(ctrlpkg.CRMetrics{Reader: mgr.GetClient()}); err != nil {
			return fmt.Errorf("register collector metrics: %w", err)
		}
	}
	settings := manifests.Settings{
		CollectorImage: o.collectorImage, TargetAllocatorImage: o.targetAllocatorImage,
		AllowClusterWideGrants: o.clusterWideGrants, GrantNamespaces: o.grantNamespaces,
		AnnotationsFilter: o.annotationsFilter, LabelsFilter: o.labelsFilter,
		ComponentRBACEverywhere: o.componentRBAC, ComponentRBACNamespaces: o.componentRBACNamespaces,
		OperatorNamespace: operatorNamespace(),
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
	if err := (&ctrlpkg.InstrumentationReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: scheme, Recorder: recorder}).SetupWithManager(mgr, copts); err != nil {
		return fmt.Errorf("set up instrumentation reconciler: %w", err)
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

// uninstall runs ctrlpkg.Uninstall with a direct client.
func uninstall(ctx context.Context, o options) (int, error) {
	scheme, err := ctrlpkg.NewScheme()
	if err != nil {
		return 0, err
	}
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{Scheme: scheme})
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	stop := types.NamespacedName{Namespace: o.leaderElectionNS, Name: o.uninstallStop}
	return ctrlpkg.Uninstall(ctx, c, scheme, o.watchNamespaces, stop, time.Minute)
}

// defaultCollectorImage is the upstream operator v0.158's default collector
// image, so collectors that name none keep their image when shardwise takes
// over.
const defaultCollectorImage = "ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector:0.158.0"

// splitList reads a comma-separated flag value, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// operatorNamespace is the operator's namespace, admitted by the allocators'
// NetworkPolicies: $POD_NAMESPACE, else the pod's namespace when in a
// cluster, else empty.
func operatorNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// appendPatterns is a flag that compiles each comma-separated regular
// expression of its value into dst.
func appendPatterns(dst *[]*regexp.Regexp) func(string) error {
	return func(v string) error {
		for _, p := range splitList(v) {
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("pattern %q: %w", p, err)
			}
			*dst = append(*dst, re)
		}
		return nil
	}
}
