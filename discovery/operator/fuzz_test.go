package operator

import (
	"context"
	"slices"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	promoperator "github.com/prometheus-operator/prometheus-operator/pkg/operator"
	"github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	prometheusclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// fuzzGood is a valid ServiceMonitor generated beside every fuzzed object:
// its job must survive whatever the fuzzed object is.
const fuzzGood = `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: good, namespace: fuzz, labels: {app: good}}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: metrics, interval: 15s}]
`

// FuzzOperatorResources drives the path that turns prometheus-operator
// resources into scrape configs (the resource selector and config generator
// of Watcher.generateConfigs) with a fuzzed ServiceMonitor,
// PodMonitor, Probe or ScrapeConfig beside a valid ServiceMonitor. It checks
// that nothing panics (generateConfigs turns a generator panic into a failed
// generation, which is a finding here), that a bad object is rejected on
// its own (the generation succeeds and keeps the valid monitor's job), and
// that the output is what Prometheus' config loader accepts (generateConfigs
// loads it; the served configs are marshalled and loaded again).
func FuzzOperatorResources(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: a}}\n  endpoints: [{port: web, path: /m, scheme: https, bearerTokenSecret: {name: s, key: k}, relabelings: [{action: replace, sourceLabels: [__meta_kubernetes_pod_name], targetLabel: pod}]}]\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: p}\nspec:\n  selector: {matchExpressions: [{key: app, operator: In, values: [x]}]}\n  podMetricsEndpoints: [{port: metrics, interval: 5s, metricRelabelings: [{action: drop, regex: 'go_.*', sourceLabels: [__name__]}]}]\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: Probe\nmetadata: {name: pr}\nspec:\n  prober: {url: blackbox:9115}\n  targets: {staticConfig: {static: [https://example.com], labels: {env: prod}}}\n",
		"apiVersion: monitoring.coreos.com/v1alpha1\nkind: ScrapeConfig\nmetadata: {name: sc}\nspec:\n  staticConfigs: [{targets: ['a:9090'], labels: {x: y}}]\n  relabelings: [{action: labelmap, regex: '__meta_(.+)'}]\n",
		"apiVersion: monitoring.coreos.com/v1alpha1\nkind: ScrapeConfig\nmetadata: {name: bad}\nspec:\n  httpSDConfigs: [{url: 'not a url'}]\n",
		"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: bad}\nspec:\n  selector: {}\n  endpoints: [{port: x, relabelings: [{action: replace, regex: '(', targetLabel: y}]}]\n",
	} {
		f.Add([]byte(seed))
	}
	w, err := newFuzzWatcher(nil)
	require.NoError(f, err)
	var good monitoringv1.ServiceMonitor
	require.NoError(f, sigsyaml.Unmarshal([]byte(fuzzGood), &good))

	f.Fuzz(func(t *testing.T, doc []byte) {
		obj, kind := decodeMonitoringObject(doc)
		if obj == nil {
			return
		}
		// Every object is in the watched namespace, so it is selected.
		obj.SetNamespace("fuzz")
		if obj.GetName() == "" || obj.GetName() == good.Name {
			obj.SetName("fuzzed")
		}
		active := map[string]kindInformers{}
		add := func(kind string, o runtime.Object) {
			inf := newIndexOnlyInformer(o)
			require.NoError(t, inf.GetIndexer().Add(o))
			active[kind] = kindInformers{metav1.NamespaceAll: inf}
		}
		add(KindServiceMonitor, good.DeepCopy())
		if kind == KindServiceMonitor {
			require.NoError(t, active[KindServiceMonitor][metav1.NamespaceAll].GetIndexer().Add(obj))
		} else {
			add(kind, obj)
		}
		for _, k := range []string{KindPodMonitor, KindProbe, KindScrapeConfig} {
			if active[k] == nil {
				active[k] = kindInformers{}
			}
		}

		scs, err := w.generateConfigs(context.Background(), fuzzSelector(t, w), fuzzStore(), active, nil)
		require.NoError(t, err, "a fuzzed object fails the whole generation:\n%s", doc)
		jobs := make([]string, 0, len(scs))
		for _, sc := range scs {
			jobs = append(jobs, sc.JobName)
		}
		require.True(t, slices.Contains(jobs, "serviceMonitor/fuzz/good/0"), "the valid monitor's job is kept beside the fuzzed object, got %v", jobs)

		// What the allocator serves reloads as a Prometheus config.
		out, err := yaml.Marshal(map[string]any{"scrape_configs": scs})
		if err != nil {
			return // a field the marshaller cannot render is the server's concern, tested there
		}
		_, err = promconfig.Load(string(out), nil)
		require.NoError(t, err, "served scrape configs do not reload:\n%s", out)
	})
}

// newFuzzWatcher is a watcher of every kind in every namespace, with no
// clients: only its generation is used.
func newFuzzWatcher(m *Metrics) (*Watcher, error) {
	all := &metav1.LabelSelector{}
	return NewWatcher(nil, nil, nil, WatcherOptions{
		Namespace: "fuzz",
		Metrics:   m,
		Config: allocatorconfig.PrometheusCRConfig{
			Enabled:                true,
			ServiceMonitorSelector: all, ServiceMonitorNamespaceSelector: all,
			PodMonitorSelector: all, PodMonitorNamespaceSelector: all,
			ProbeSelector: all, ProbeNamespaceSelector: all,
			ScrapeConfigSelector: all, ScrapeConfigNamespaceSelector: all,
		},
	})
}

// monitoringObject is a decoded prometheus-operator resource.
type monitoringObject interface {
	metav1.Object
	runtime.Object
}

// decodeMonitoringObject decodes one of the four prometheus-operator kinds
// from YAML or JSON; nil when doc is none of them.
func decodeMonitoringObject(doc []byte) (monitoringObject, string) {
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
		return nil, ""
	}
	var obj monitoringObject
	switch tm.Kind {
	case KindServiceMonitor:
		obj = &monitoringv1.ServiceMonitor{}
	case KindPodMonitor:
		obj = &monitoringv1.PodMonitor{}
	case KindProbe:
		obj = &monitoringv1.Probe{}
	case KindScrapeConfig:
		obj = &monitoringv1alpha1.ScrapeConfig{}
	default:
		return nil, ""
	}
	if err := sigsyaml.Unmarshal(doc, obj); err != nil {
		return nil, ""
	}
	return obj, tm.Kind
}

// newIndexOnlyInformer is an informer that is never run: the generation
// reads its indexer only.
func newIndexOnlyInformer(o runtime.Object) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(&cache.ListWatch{}, o, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// fuzzSelector is a resource selector over the namespace "fuzz".
func fuzzSelector(t *testing.T, w *Watcher) *prometheus.ResourceSelector {
	t.Helper()
	nsInf := newIndexOnlyInformer(&corev1.Namespace{})
	require.NoError(t, nsInf.GetIndexer().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Labels: map[string]string{"kubernetes.io/metadata.name": "fuzz"}}}))
	sel, err := prometheus.NewResourceSelector(w.log, w.prom, fuzzStore(), nsInf, promoperator.NewMetrics(prometheusclient.NewRegistry()), selectorRecorder())
	require.NoError(t, err)
	return sel
}

// fuzzStore reads no Secret or ConfigMap: a reference to one is refused for
// its resource, as a reference outside secret_namespaces is.
func fuzzStore() *assets.StoreBuilder {
	none := map[string]bool{}
	return assets.NewStoreBuilder(
		restrictedConfigMaps{reads: restrictedReads[corev1.ConfigMap]{kind: "configmap", allowed: none, transient: func(error) {}}},
		restrictedSecrets{reads: restrictedReads[corev1.Secret]{kind: "secret", allowed: none, transient: func(error) {}}})
}

// TestRefusedJobReported: a ScrapeConfig prometheus-operator accepts but
// whose job Prometheus refuses (an http_sd URL without a scheme: the CRD's
// pattern refuses it, an older or edited CRD may not) is left out
// alone, and not only in the log: it is counted in
// shardwise_allocator_invalid_resources and gets a Warning event, while
// the valid ServiceMonitor beside it keeps its job.
func TestRefusedJobReported(t *testing.T) {
	t.Parallel()
	m, err := NewMetrics(prometheusclient.NewRegistry())
	require.NoError(t, err)
	w, err := newFuzzWatcher(m)
	require.NoError(t, err)
	var good monitoringv1.ServiceMonitor
	require.NoError(t, sigsyaml.Unmarshal([]byte(fuzzGood), &good))
	good.Namespace = "fuzz"
	bad, kind := decodeMonitoringObject([]byte("apiVersion: monitoring.coreos.com/v1alpha1\nkind: ScrapeConfig\nmetadata: {name: bad, namespace: fuzz}\nspec:\n  httpSDConfigs: [{url: 'not a url'}]\n"))
	require.Equal(t, KindScrapeConfig, kind)
	active := map[string]kindInformers{KindPodMonitor: {}, KindProbe: {}}
	for kind, o := range map[string]runtime.Object{KindServiceMonitor: &good, KindScrapeConfig: bad} {
		inf := newIndexOnlyInformer(o)
		require.NoError(t, inf.GetIndexer().Add(o))
		active[kind] = kindInformers{metav1.NamespaceAll: inf}
	}
	rec := record.NewFakeRecorder(10)
	scs, err := w.generateConfigs(t.Context(), fuzzSelector(t, w), fuzzStore(), active, rec)
	require.NoError(t, err)
	require.Len(t, scs, 1)
	require.Equal(t, "serviceMonitor/fuzz/good/0", scs[0].JobName)
	require.Equal(t, 1.0, testutil.ToFloat64(m.invalidResource.WithLabelValues(KindScrapeConfig)))
	require.Equal(t, 0.0, testutil.ToFloat64(m.invalidResource.WithLabelValues(KindServiceMonitor)))
	require.Len(t, rec.Events, 1)
	require.Contains(t, <-rec.Events, "Warning InvalidConfiguration left out by the shardwise allocator: Prometheus refuses its scrape config")
}
