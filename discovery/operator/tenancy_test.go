package operator

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	promoperator "github.com/prometheus-operator/prometheus-operator/pkg/operator"
	"github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	prometheusclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// tenancySelectAll selects every resource of every namespace.
const tenancySelectAll = `prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {}
  pod_monitor_selector: {}
  pod_monitor_namespace_selector: {}
  probe_selector: {}
  probe_namespace_selector: {}
  scrape_config_selector: {}
  scrape_config_namespace_selector: {}
`

// tenancyGenerate parses the prometheus_cr block extra appended to
// tenancySelectAll, and generates the scrape configs of objs (YAML
// documents) in namespaces tenant-a and tenant-b as an allocator of
// namespace "monitoring" does, with the Warning events in rec.
func tenancyGenerate(t *testing.T, extra string, m *Metrics, rec record.EventRecorder, objs ...string) []*promconfig.ScrapeConfig {
	t.Helper()
	parsed, err := allocatorconfig.ParseConfig([]byte(tenancySelectAll + extra))
	require.NoError(t, err)
	w, err := NewWatcher(nil, nil, nil, WatcherOptions{Namespace: "monitoring", Metrics: m, Config: parsed.PrometheusCR})
	require.NoError(t, err)
	nsInf := newIndexOnlyInformer(&corev1.Namespace{})
	for _, ns := range []string{"monitoring", "tenant-a", "tenant-b"} {
		require.NoError(t, nsInf.GetIndexer().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"kubernetes.io/metadata.name": ns}}}))
	}
	sel, err := prometheus.NewResourceSelector(w.log, w.prom, fuzzStore(), nsInf, promoperator.NewMetrics(prometheusclient.NewRegistry()), selectorRecorder())
	require.NoError(t, err)
	active := map[string]kindInformers{}
	for _, k := range kinds {
		active[k.kind] = kindInformers{}
	}
	for _, doc := range objs {
		obj, kind := decodeMonitoringObject([]byte(doc))
		require.NotNil(t, obj, doc)
		inf := active[kind][metav1.NamespaceAll]
		if inf == nil {
			inf = newIndexOnlyInformer(obj)
			active[kind][metav1.NamespaceAll] = inf
		}
		require.NoError(t, inf.GetIndexer().Add(obj))
	}
	scs, err := w.generateConfigs(t.Context(), sel, fuzzStore(), active, rec)
	require.NoError(t, err)
	return scs
}

// TestIgnoreNamespaceSelectors is issue 24 item 3: a ServiceMonitor of
// tenant-a whose namespaceSelector reaches tenant-b (any, or naming it)
// discovers targets in tenant-b unless ignore_namespace_selectors is on;
// with it on, its Kubernetes SD watches tenant-a only, and
// enforced_namespace_label sets the namespace label last, after the
// monitor's relabeling that tried to rewrite it.
func TestIgnoreNamespaceSelectors(t *testing.T) {
	t.Parallel()
	const on = "  ignore_namespace_selectors: true\n  enforced_namespace_label: namespace\n"
	for _, tc := range []struct {
		name, nsSelector, config string
		want                     []string // the namespaces its Kubernetes SD watches; nil: all
		enforced                 bool
	}{
		{"any, off", "{any: true}", "", nil, false},
		{"matchNames, off", "{matchNames: [tenant-b]}", "", []string{"tenant-b"}, false},
		{"any, on", "{any: true}", on, []string{"tenant-a"}, true},
		{"matchNames, on", "{matchNames: [tenant-b]}", on, []string{"tenant-a"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			scs := tenancyGenerate(t, tc.config, nil, nil, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: tenant-a}
spec:
  namespaceSelector: `+tc.nsSelector+`
  selector: {matchLabels: {app: web}}
  endpoints:
  - port: metrics
    relabelings: [{targetLabel: namespace, replacement: tenant-b}]
`)
			require.Len(t, scs, 1)
			require.Len(t, scs[0].ServiceDiscoveryConfigs, 1)
			sd, ok := scs[0].ServiceDiscoveryConfigs[0].(*kubernetes.SDConfig)
			require.True(t, ok)
			require.Equal(t, tc.want, sd.NamespaceDiscovery.Names)
			// The last relabeling that writes the namespace label wins.
			var last string
			for _, r := range scs[0].RelabelConfigs {
				if r.TargetLabel == "namespace" {
					last = r.Replacement
				}
			}
			if tc.enforced {
				require.Equal(t, "tenant-a", last, "the enforced namespace label comes after the monitor's relabeling")
			} else {
				require.Equal(t, "tenant-b", last)
			}
		})
	}
}

// TestEnforcedLimits: the enforced limits cap a monitor's own.
func TestEnforcedLimits(t *testing.T) {
	t.Parallel()
	scs := tenancyGenerate(t, `  enforced_sample_limit: 100
  enforced_target_limit: 10
  enforced_label_limit: 20
  enforced_label_name_length_limit: 30
  enforced_label_value_length_limit: 40
  enforced_body_size_limit: 1MB
`, nil, nil, `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: sm, namespace: tenant-a}
spec:
  selector: {matchLabels: {app: web}}
  sampleLimit: 100000
  endpoints: [{port: metrics}]
`)
	require.Len(t, scs, 1)
	sc := scs[0]
	require.Equal(t, []uint{100, 10, 20, 30, 40}, []uint{sc.SampleLimit, sc.TargetLimit, sc.LabelLimit, sc.LabelNameLengthLimit, sc.LabelValueLengthLimit})
	require.EqualValues(t, 1<<20, sc.BodySizeLimit)
}

// TestScrapeConfigAllowedSDs is issue 24 item 3: a ScrapeConfig whose
// service discovery is not among scrape_config_allowed_sds (httpSDConfigs,
// which makes the allocator fetch any URL) is left out with a Warning event
// and counted in shardwise_allocator_invalid_resources; the static one
// beside it keeps its job. Without the list both are served.
func TestScrapeConfigAllowedSDs(t *testing.T) {
	t.Parallel()
	const httpSC = `apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata: {name: http, namespace: tenant-a}
spec:
  httpSDConfigs: [{url: 'http://169.254.169.254/latest/meta-data'}]
`
	const staticSC = `apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata: {name: static, namespace: tenant-b}
spec:
  staticConfigs: [{targets: ['web:8080']}]
`
	jobs := func(scs []*promconfig.ScrapeConfig) []string {
		var out []string
		for _, sc := range scs {
			out = append(out, sc.JobName)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"scrapeConfig/tenant-a/http", "scrapeConfig/tenant-b/static"}, jobs(tenancyGenerate(t, "", nil, nil, httpSC, staticSC)))

	m, err := NewMetrics(prometheusclient.NewRegistry())
	require.NoError(t, err)
	rec := record.NewFakeRecorder(10)
	scs := tenancyGenerate(t, "  scrape_config_allowed_sds: [static, kubernetes]\n", m, rec, httpSC, staticSC)
	require.Equal(t, []string{"scrapeConfig/tenant-b/static"}, jobs(scs))
	require.Equal(t, 1.0, testutil.ToFloat64(m.invalidResource.WithLabelValues(KindScrapeConfig)))
	require.Len(t, rec.Events, 1)
	require.Contains(t, <-rec.Events, "Warning ServiceDiscoveryNotAllowed left out by the shardwise allocator: service discovery [http] is not among the allowed [static kubernetes]")
}

// TestScrapeConfigSDKinds: the kinds scrape_config_allowed_sds accepts are
// exactly those of prometheus-operator's ScrapeConfig, as scrapeConfigSDs
// names them.
func TestScrapeConfigSDKinds(t *testing.T) {
	t.Parallel()
	var sc monitoringv1alpha1.ScrapeConfig
	v := reflect.ValueOf(&sc.Spec).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if f := v.Field(i); f.Kind() == reflect.Slice && (strings.HasSuffix(name, "SDConfigs") || name == "staticConfigs") {
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		}
	}
	require.ElementsMatch(t, allocatorconfig.ScrapeConfigSDKinds, scrapeConfigSDs(&sc))
}
