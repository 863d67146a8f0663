// Package testenv starts a real kube-apiserver and etcd (controller-runtime
// envtest) for tests. The binaries come from hack/envtest.sh, which builds them
// from pinned Go modules; make test passes their directory in KUBEBUILDER_ASSETS.
//
// Without KUBEBUILDER_ASSETS, tests that need a control plane are skipped,
// unless SHARDWISE_REQUIRE_ENVTEST is set (as make test does), in which case
// they fail: a CI run must never pass by skipping them.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ErrUnavailable means no control plane binaries were configured.
var ErrUnavailable = errors.New("envtest: KUBEBUILDER_ASSETS is not set (run make test, or make envtest and export KUBEBUILDER_ASSETS=$(./hack/envtest.sh))")

// Root is the repository root, for paths to CRDs and fixtures.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// MonitoringCRDs is the directory of the ServiceMonitor, PodMonitor, Probe and
// ScrapeConfig CRDs generated from the pinned prometheus-operator types.
func MonitoringCRDs() string { return filepath.Join(Root(), "test", "crds") }

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	// Webhook is where the API server calls the installed admission webhooks
	// (host, port and the directory of the serving certificate it trusts);
	// zero unless Options.WebhookPaths was set.
	Webhook envtest.WebhookInstallOptions
	env     *envtest.Environment
}

// Options configure a control plane.
type Options struct {
	// CRDDirs are directories (or files) of CRDs to install.
	CRDDirs []string
	// WebhookPaths are files or directories of webhook configurations to
	// install. envtest rewrites them to call a local server over TLS and
	// generates the serving certificate; see Env.Webhook.
	WebhookPaths []string
	// Scheme, when set with WebhookPaths, makes envtest point the conversion
	// webhook of every CRD whose kind is Convertible in Scheme at the local
	// webhook server's /convert (over TLS with its CA).
	Scheme *k8sruntime.Scheme
	// CheckLeaks makes Main fail a passing run that leaves goroutines behind
	// once the control plane is stopped, but for LeakIgnores and IgnoreLeaks.
	CheckLeaks  bool
	IgnoreLeaks []goleak.Option
}

// Start starts a control plane with the CRDs found in crdDirs installed.
// It returns ErrUnavailable when no binaries are configured.
func Start(crdDirs ...string) (*Env, error) {
	return StartWith(Options{CRDDirs: crdDirs})
}

// StartWith starts a control plane as o says. It returns ErrUnavailable when
// no binaries are configured.
func StartWith(o Options) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, ErrUnavailable
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     o.CRDDirs,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: o.WebhookPaths},
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: o.Scheme},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	e := &Env{Config: cfg, env: env}
	if len(o.WebhookPaths) > 0 {
		e.Webhook = env.WebhookInstallOptions
	}
	return e, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stop envtest: %w", err)
	}
	return nil
}

// Main runs a package's tests with a shared control plane, for TestMain. When
// binaries are unavailable and not required, tests run with env == nil and
// should call Require, which skips them.
func Main(m *testing.M, env **Env, crdDirs ...string) int {
	return MainWith(m, env, Options{CRDDirs: crdDirs})
}

// MainWith is Main with Options, for packages that also install webhooks
// or check for leaks. controller-runtime's logger is set to discard.
func MainWith(m *testing.M, env **Env, o Options) int {
	ctrl.SetLogger(logr.Discard())
	code := runWith(m, env, o)
	if code == 0 && o.CheckLeaks {
		if err := goleak.Find(append(LeakIgnores(), o.IgnoreLeaks...)...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// runWith runs the tests with a control plane as o says, and stops it.
func runWith(m *testing.M, env **Env, o Options) int {
	e, err := StartWith(o)
	switch {
	case errors.Is(err, ErrUnavailable) && os.Getenv("SHARDWISE_REQUIRE_ENVTEST") == "":
		fmt.Fprintln(os.Stderr, "testenv: control plane unavailable, envtest tests will skip:", err)
	case err != nil:
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	default:
		*env = e
		defer func() {
			if err := e.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "testenv:", err)
			}
		}()
	}
	return m.Run()
}

// Require skips the test when the control plane is unavailable.
func Require(tb testing.TB, env *Env) *rest.Config {
	tb.Helper()
	if env == nil {
		tb.Skip(ErrUnavailable.Error())
	}
	return env.Config
}

// LeakIgnores are the goroutines that client-go, klog and idle HTTP
// connections to the test API server leave behind by design; pass them to
// goleak.Find after Main in packages that talk to the control plane.
func LeakIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Typed[...]).updateUnfinishedWorkLoop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*Broadcaster).loop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/tools/record.(*eventBroadcasterImpl).StartEventWatcher.func1"),
		// The one event recorder of the process that prometheus-operator's
		// resource selector takes (discovery/operator.selectorRecorder):
		// its broadcaster cannot be stopped.
		goleak.IgnoreAnyFunction("k8s.io/client-go/tools/events.(*eventBroadcasterImpl).startEventWatcher.func1"),
	}
}

// WriteKubeconfig writes a kubeconfig file for the control plane into a
// temporary directory of tb and returns its path, for code that loads its
// client configuration from a file (the allocator, Prometheus' kubernetes_sd).
func WriteKubeconfig(tb testing.TB, cfg *rest.Config) string {
	tb.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(tb.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		tb.Fatalf("write kubeconfig: %v", err)
	}
	return path
}
