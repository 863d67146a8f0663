package operator

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	promrelabel "github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/discovery"
	"github.com/shardwise/shardwise/discovery/relabel"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// sinkRecorder is a ConfigSink that keeps the configs it is given.
type sinkRecorder struct {
	mu   sync.Mutex
	last []*promconfig.ScrapeConfig
	ch   chan struct{}
}

func newSinkRecorder() *sinkRecorder { return &sinkRecorder{ch: make(chan struct{}, 1)} }

func (s *sinkRecorder) ApplyOperatorConfig(scs []*promconfig.ScrapeConfig) error {
	s.mu.Lock()
	s.last = scs
	s.mu.Unlock()
	select {
	case s.ch <- struct{}{}:
	default:
	}
	return nil
}

// waitFor waits until the job names satisfy cond, bounded.
func (s *sinkRecorder) waitFor(t *testing.T, cond func(jobs []string) bool) []*promconfig.ScrapeConfig {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		jobs := []string{}
		for _, sc := range last {
			jobs = append(jobs, sc.JobName)
		}
		if last != nil && cond(jobs) {
			return last
		}
		select {
		case <-s.ch:
		case <-deadline:
			t.Fatalf("generated jobs %v never met the condition", jobs)
		}
	}
}

// applyManifests creates every object of a multi-document YAML file.
func applyManifests(t *testing.T, cfg *rest.Config, file string) {
	t.Helper()
	c := newCtrlClient(t, cfg)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var obj map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &obj))
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		err := c.Create(t.Context(), u)
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "create %s %s", u.GetKind(), u.GetName())
		}
	}
}

func startOperatorWatcher(t *testing.T, cfg *rest.Config, sink ConfigSink, opts WatcherOptions) {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	mon, err := monitoringclient.NewForConfig(cfg)
	require.NoError(t, err)
	if opts.Logger == nil {
		opts.Logger = testenv.Logger(t, slog.LevelWarn)
	}
	if opts.MinInterval == 0 {
		opts.MinInterval = 10 * time.Millisecond
	}
	w, err := NewWatcher(kube, mon, sink, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("Watcher.Run did not return")
		}
	})
}

const goldenConfig = `
collector_namespace: otel
prometheus_cr:
  enabled: true
  scrape_interval: 30s
  secret_namespaces: [otel]
  service_monitor_selector: {matchLabels: {release: shardwise}}
  service_monitor_namespace_selector:
    matchExpressions: [{key: team, operator: NotIn, values: [b]}]
  pod_monitor_selector: {}
  pod_monitor_namespace_selector: {matchLabels: {team: a}}
  probe_selector: {}
  probe_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: otel}}
  scrape_config_selector: {}
  scrape_config_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: otel}}
`

// TestOperatorGolden generates scrape configs from a corpus of
// prometheus-operator resources with prometheus-operator's own generator,
// against a real API server, and compares them with a golden file.
func TestOperatorGolden(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	applyManifests(t, cfg, filepath.Join("testdata", "corpus.yaml"))
	parsed, err := allocatorconfig.ParseConfig([]byte(goldenConfig))
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{
		Config: parsed.PrometheusCR, Namespace: parsed.Collector.CollectorNamespace, Metrics: metrics,
	})
	want := []string{
		"podMonitor/team-a/pods/0",
		"probe/otel/blackbox",
		"scrapeConfig/otel/external",
		"serviceMonitor/otel/web/0",
		"serviceMonitor/otel/web/1",
		"serviceMonitor/team-a/api/0",
	}
	scs := sink.waitFor(t, func(jobs []string) bool {
		slices.Sort(jobs)
		return slices.Equal(jobs, want)
	})

	// Rejected resources: a metric and a Warning event each.
	require.InDelta(t, 1, testutil.ToFloat64(metrics.invalidResource.WithLabelValues(KindServiceMonitor)), 0)
	require.InDelta(t, 1, testutil.ToFloat64(metrics.invalidResource.WithLabelValues(KindScrapeConfig)), 0)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, obj := range []struct{ ns, name string }{{"team-a", "forbidden-secret"}, {"otel", "bad-regex"}} {
		require.Eventually(t, func() bool {
			evs, err := kube.CoreV1().Events(obj.ns).List(t.Context(), metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + obj.name + ",type=" + corev1.EventTypeWarning,
			})
			return err == nil && len(evs.Items) > 0
		}, 30*time.Second, 50*time.Millisecond, "Warning event for %s/%s", obj.ns, obj.name)
	}

	slices.SortFunc(scs, func(a, b *promconfig.ScrapeConfig) int { return strings.Compare(a.JobName, b.JobName) })
	got, err := yaml.Marshal(struct {
		ScrapeConfigs []*promconfig.ScrapeConfig `yaml:"scrape_configs"`
	}{scs})
	require.NoError(t, err)
	// Refresh with go test ./discovery/operator/ -run TestOperatorGolden -update.
	golden.Assert(t, string(got), "golden.yaml")

	// The generated jobs carry prometheus-operator's sharding rule; the
	// filter neutralises it, so a matching target is kept.
	var web *promconfig.ScrapeConfig
	for _, sc := range scs {
		if sc.JobName == "serviceMonitor/otel/web/0" {
			web = sc
		}
	}
	require.True(t, slices.ContainsFunc(web.RelabelConfigs, func(rc *promrelabel.Config) bool {
		return strings.Contains(rc.Regex.String(), "$(SHARD)")
	}))
	// An explicit empty replacement survives in memory (its YAML form above
	// drops it: whoever serves these configs must keep it).
	require.True(t, slices.ContainsFunc(web.RelabelConfigs, func(rc *promrelabel.Config) bool {
		return rc.TargetLabel == "empty" && rc.Replacement == ""
	}))
	f := relabel.NewFilter(allocatorconfig.FilterRelabelConfig)
	f.ApplyConfig(map[string]*promconfig.ScrapeConfig{web.JobName: web})
	tl := model.LabelSet{
		"__address__": "10.0.0.1:8080",
		"__meta_kubernetes_service_label_release":             "x",
		"__meta_kubernetes_service_label_app":                 "web",
		"__meta_kubernetes_service_labelpresent_app":          "true",
		"__meta_kubernetes_endpointslice_port_name":           "metrics",
		"__meta_kubernetes_endpointslice_address_target_kind": "Pod",
		"__meta_kubernetes_endpointslice_address_target_name": "web-1",
		"__meta_kubernetes_namespace":                         "otel",
	}
	out := f.Process(map[string][]*targetgroup.Group{web.JobName: {{Source: "s", Targets: []model.LabelSet{tl}}}})
	require.Len(t, out[web.JobName], 1)
}

// TestOperatorCRDInstalledLater removes the ScrapeConfig CRD, starts the
// watcher, then installs the CRD: its resources are picked up without a
// restart. Not parallel: the CRD is shared by the whole API server.
func TestOperatorCRDInstalledLater(t *testing.T) {
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	c, err := ctrlclient.New(cfg, ctrlclient.Options{})
	require.NoError(t, err)
	crdFile := filepath.Join(testenv.MonitoringCRDs(), "monitoring.coreos.com_scrapeconfigs.yaml")
	b, err := os.ReadFile(crdFile)
	require.NoError(t, err)
	var crdObj map[string]any
	require.NoError(t, sigsyaml.Unmarshal(b, &crdObj))
	crd := &unstructured.Unstructured{Object: crdObj}
	require.NoError(t, c.Delete(ctx, crd.DeepCopy()))
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	served := func() bool {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1alpha1")
		if err != nil {
			return false
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "scrapeconfigs" })
	}
	require.Eventually(t, func() bool { return !served() }, 60*time.Second, 100*time.Millisecond, "CRD removal")

	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: map[string]string{"late": "yes"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	parsed, err := allocatorconfig.ParseConfig([]byte(`
collector_namespace: late
prometheus_cr:
  enabled: true
  crd_poll_interval: 100ms
  service_monitor_selector: {}
  scrape_config_selector: {}
  service_monitor_namespace_selector: {matchLabels: {late: "yes"}}
  scrape_config_namespace_selector: {matchLabels: {late: "yes"}}
`))
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	metrics, err := NewMetrics(reg)
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: "late", Metrics: metrics})
	sink.waitFor(t, func(jobs []string) bool { return len(jobs) == 0 })
	require.InDelta(t, 0, testutil.ToFloat64(metrics.crdAvailable.WithLabelValues(KindScrapeConfig)), 0)

	// Other kinds keep working meanwhile.
	sm := `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: late}
spec:
  selector: {matchLabels: {app: a}}
  endpoints: [{port: metrics}]
`
	applyDoc(t, c, sm)
	sink.waitFor(t, func(jobs []string) bool { return slices.Equal(jobs, []string{"serviceMonitor/late/sm/0"}) })

	// Install the CRD and create a ScrapeConfig.
	recreated := &unstructured.Unstructured{Object: crdObj}
	recreated.SetResourceVersion("")
	require.NoError(t, c.Create(ctx, recreated))
	require.Eventually(t, served, 60*time.Second, 100*time.Millisecond, "CRD installation")
	sc := `apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata: {name: sc, namespace: late}
spec:
  staticConfigs: [{targets: ["a:1"]}]
`
	require.Eventually(t, func() bool { return applyDocErr(t, c, sc) == nil }, 60*time.Second, 200*time.Millisecond, "create ScrapeConfig once the CRD is established")
	sink.waitFor(t, func(jobs []string) bool {
		slices.Sort(jobs)
		return slices.Equal(jobs, []string{"scrapeConfig/late/sc", "serviceMonitor/late/sm/0"})
	})
	require.InDelta(t, 1, testutil.ToFloat64(metrics.crdAvailable.WithLabelValues(KindScrapeConfig)), 0)
}

func newCtrlClient(t *testing.T, cfg *rest.Config) ctrlclient.Client {
	t.Helper()
	c, err := ctrlclient.New(cfg, ctrlclient.Options{})
	require.NoError(t, err)
	return c
}

func applyDoc(t *testing.T, c ctrlclient.Client, doc string) {
	t.Helper()
	require.NoError(t, applyDocErr(t, c, doc))
}

func applyDocErr(t *testing.T, c ctrlclient.Client, doc string) error {
	t.Helper()
	var obj map[string]any
	require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &obj))
	err := c.Create(t.Context(), &unstructured.Unstructured{Object: obj})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// TestOperatorSecretRotation: a rotated Secret reaches the generated config
// at the next generation.
func TestOperatorSecretRotation(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "rotate"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tok"}, StringData: map[string]string{"t": "one"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyDoc(t, newCtrlClient(t, cfg), `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: rotate}
spec:
  selector: {matchLabels: {app: a}}
  endpoints:
  - port: metrics
    authorization: {credentials: {name: tok, key: t}}
`)
	parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  crd_poll_interval: 100ms
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: rotate}}
`))
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns})
	credentials := func() string {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.last) != 1 || sink.last[0].HTTPClientConfig.Authorization == nil {
			return ""
		}
		return string(sink.last[0].HTTPClientConfig.Authorization.Credentials)
	}
	require.Eventually(t, func() bool { return credentials() == "one" }, 60*time.Second, 50*time.Millisecond)
	_, err = kube.CoreV1().Secrets(ns).Update(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tok"}, StringData: map[string]string{"t": "two"},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return credentials() == "two" }, 60*time.Second, 50*time.Millisecond)
}

// TestOperatorAllowDenyNamespaces: allow_namespaces and deny_namespaces
// restrict the namespaces resources are read from.
func TestOperatorAllowDenyNamespaces(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c := newCtrlClient(t, cfg)
	for _, ns := range []string{"allow-a", "allow-b"} {
		_, err = kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"allowtest": "yes"}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		applyDoc(t, c, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: `+ns+`}
spec:
  selector: {matchLabels: {app: a}}
  endpoints: [{port: metrics}]
`)
	}
	for _, tc := range []struct {
		name, extra string
		want        []string
	}{
		{"allow", "  allow_namespaces: [allow-a]\n", []string{"serviceMonitor/allow-a/sm/0"}},
		{"deny", "  deny_namespaces: [allow-a]\n", []string{"serviceMonitor/allow-b/sm/0"}},
		{"neither", "", []string{"serviceMonitor/allow-a/sm/0", "serviceMonitor/allow-b/sm/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {allowtest: "yes"}}
` + tc.extra))
			require.NoError(t, err)
			sink := newSinkRecorder()
			startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: "allow-a"})
			sink.waitFor(t, func(jobs []string) bool {
				slices.Sort(jobs)
				return slices.Equal(jobs, tc.want)
			})
		})
	}
}

func TestNewOperatorWatcherNeedsNamespace(t *testing.T) {
	t.Parallel()
	_, err := NewWatcher(nil, nil, nil, WatcherOptions{})
	require.ErrorIs(t, err, allocatorconfig.ErrConfig)
	require.ErrorContains(t, err, "collector_namespace")
}

// TestOperatorSecretInMonitorNamespace: a monitor's Secret is read from the
// monitor's own namespace, as prometheus-operator does, unless
// secret_namespaces narrows the namespaces Secrets are read from.
func TestOperatorSecretInMonitorNamespace(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const own, mon = "secret-own", "secret-mon"
	for _, ns := range []string{own, mon} {
		_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = kube.CoreV1().Secrets(mon).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "auth"}, StringData: map[string]string{"user": "u", "pass": "p", "tok": "t"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyDoc(t, newCtrlClient(t, cfg), `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: `+mon+`}
spec:
  selector: {matchLabels: {app: a}}
  endpoints:
  - port: basic
    basicAuth: {username: {name: auth, key: user}, password: {name: auth, key: pass}}
  - port: bearer
    authorization: {credentials: {name: auth, key: tok}}
`)
	for _, tc := range []struct {
		name, extra string
		want        []string
		invalid     float64
	}{
		{"monitor namespace by default", "", []string{"serviceMonitor/secret-mon/sm/0", "serviceMonitor/secret-mon/sm/1"}, 0},
		{"secret_namespaces narrows", "  secret_namespaces: [" + own + "]\n", []string{}, 1},
		{"secret_namespaces lists it", "  secret_namespaces: [" + own + ", " + mon + "]\n", []string{"serviceMonitor/secret-mon/sm/0", "serviceMonitor/secret-mon/sm/1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: ` + mon + `}}
` + tc.extra))
			require.NoError(t, err)
			metrics, err := NewMetrics(prometheus.NewRegistry())
			require.NoError(t, err)
			sink := newSinkRecorder()
			startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: own, Metrics: metrics})
			scs := sink.waitFor(t, func(jobs []string) bool {
				slices.Sort(jobs)
				return slices.Equal(jobs, tc.want)
			})
			require.InDelta(t, tc.invalid, testutil.ToFloat64(metrics.invalidResource.WithLabelValues(KindServiceMonitor)), 0)
			if len(scs) == 2 {
				slices.SortFunc(scs, func(a, b *promconfig.ScrapeConfig) int { return strings.Compare(a.JobName, b.JobName) })
				require.NotNil(t, scs[0].HTTPClientConfig.BasicAuth)
				require.Equal(t, "u", scs[0].HTTPClientConfig.BasicAuth.Username)
				require.Equal(t, "p", string(scs[0].HTTPClientConfig.BasicAuth.Password))
				require.NotNil(t, scs[1].HTTPClientConfig.Authorization)
				require.Equal(t, "t", string(scs[1].HTTPClientConfig.Authorization.Credentials))
			}
		})
	}
}

// TestOperatorNullNamespaceSelector: a null or missing namespace selector
// selects the allocator's own namespace, as prometheus-operator reads a
// Prometheus object's; `{}` selects every namespace.
func TestOperatorNullNamespaceSelector(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c := newCtrlClient(t, cfg)
	const own, other = "nullsel-own", "nullsel-other"
	for _, ns := range []string{own, other} {
		_, err = kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		applyDoc(t, c, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: `+ns+`}
spec:
  selector: {matchLabels: {app: a}}
  endpoints: [{port: metrics}]
`)
		applyDoc(t, c, `apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: pm, namespace: `+ns+`}
spec:
  selector: {matchLabels: {app: a}}
  podMetricsEndpoints: [{port: metrics}]
`)
	}
	ownJobs := []string{"podMonitor/nullsel-own/pm/0", "serviceMonitor/nullsel-own/sm/0"}
	otherJobs := []string{"podMonitor/nullsel-other/pm/0", "serviceMonitor/nullsel-other/sm/0"}
	for _, tc := range []struct {
		name, selectors string
		want            []string
		notWant         []string
	}{
		// The pod monitor namespace selector is missing, the service
		// monitor one null.
		{"null or missing: own namespace", "  service_monitor_namespace_selector: null\n", ownJobs, otherJobs},
		{"empty: every namespace", "  service_monitor_namespace_selector: {}\n  pod_monitor_namespace_selector: {}\n", append(slices.Clone(ownJobs), otherJobs...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  pod_monitor_selector: {}
` + tc.selectors))
			require.NoError(t, err)
			sink := newSinkRecorder()
			startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: own})
			sink.waitFor(t, func(jobs []string) bool {
				for _, j := range tc.want {
					if !slices.Contains(jobs, j) {
						return false
					}
				}
				return true
			})
			// Every generation after that has the same set: the last one
			// holds no job of another namespace.
			sink.mu.Lock()
			last := sink.last
			sink.mu.Unlock()
			for _, sc := range last {
				require.NotContains(t, tc.notWant, sc.JobName)
			}
			if tc.notWant != nil {
				require.Len(t, last, len(tc.want), "only the own namespace's jobs")
			}
		})
	}
}

// TestOperatorScrapeClassSecret: a scrape class's TLS Secret is read from
// the allocator's namespace, as prometheus-operator reads it from the
// Prometheus object's; while it cannot be read, no configuration is
// published (prometheus-operator fails the whole configuration too), and
// once it exists the jobs carry it.
func TestOperatorScrapeClassSecret(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "scrape-class-secret"
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	applyDoc(t, newCtrlClient(t, cfg), `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: scrape-class-secret}
spec:
  selector: {matchLabels: {app: a}}
  endpoints: [{port: metrics, scheme: https}]
`)
	parsed, err := allocatorconfig.ParseConfig([]byte(`
prometheus_cr:
  enabled: true
  crd_poll_interval: 100ms
  scrape_classes:
  - name: tls
    default: true
    tlsConfig: {ca: {secret: {name: class-ca, key: ca.crt}}}
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: scrape-class-secret}}
`))
	require.NoError(t, err)
	metrics, err := NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns, Metrics: metrics})
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(metrics.configErrors.WithLabelValues(discovery.SourceOperator)) >= 2
	}, 60*time.Second, 50*time.Millisecond, "failed generations while the scrape class's Secret is missing")
	sink.mu.Lock()
	require.Nil(t, sink.last, "nothing published without the scrape class's Secret")
	sink.mu.Unlock()

	ca, err := os.ReadFile(filepath.Join("testdata", "pki", "secret-ca.crt"))
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "class-ca"}, Data: map[string][]byte{"ca.crt": ca},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	scs := sink.waitFor(t, func(jobs []string) bool {
		return slices.Equal(jobs, []string{"serviceMonitor/scrape-class-secret/sm/0"})
	})
	require.Equal(t, string(ca), scs[0].HTTPClientConfig.TLSConfig.CA)
}
