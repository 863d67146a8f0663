package operator

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
	"github.com/prometheus-operator/prometheus-operator/pkg/assets"
	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	"github.com/prometheus-operator/prometheus-operator/pkg/informers"
	"github.com/prometheus-operator/prometheus-operator/pkg/listwatch"
	promoperator "github.com/prometheus-operator/prometheus-operator/pkg/operator"
	prompkg "github.com/prometheus-operator/prometheus-operator/pkg/prometheus"
	prometheusclient "github.com/prometheus/client_golang/prometheus"
	commonconfig "github.com/prometheus/common/config"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// diffCase is one case of TestOperatorDifferential: a prometheus_cr block
// and the objects it applies to. In both, $NS is the case's own namespace
// (the allocator's, labelled diffcase=$NS) and $OTHER a second one
// (labelled diffcase=$OTHER).
type diffCase struct {
	Name string `json:"name"`
	// Config is the prometheus_cr block; empty means diffDefaultConfig.
	Config string `json:"config"`
	// Jobs are the jobs prometheus-operator generates. They keep a case
	// from passing by both sides generating nothing, and pin the selection
	// independently of allocatorconfig.ParseConfig, whose selectors both sides share (a
	// parser reading a null namespace selector as {} would otherwise move
	// the reference with it).
	Jobs []string `json:"jobs"`
	// Objects is a multi-document YAML of the case's objects.
	Objects string `json:"objects"`
}

// diffDefaultConfig selects every resource of the case's own namespace.
const diffDefaultConfig = `prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {diffcase: $NS}}
  pod_monitor_selector: {}
  pod_monitor_namespace_selector: {matchLabels: {diffcase: $NS}}
  probe_selector: {}
  probe_namespace_selector: {matchLabels: {diffcase: $NS}}
  scrape_config_selector: {}
  scrape_config_namespace_selector: {matchLabels: {diffcase: $NS}}
`

// diffCommonObjects creates, in namespace ns, Secret "auth" (user, pass,
// tok, client-id, client-secret, proxy), Secret "tls" (ca.crt, tls.crt,
// tls.key) and ConfigMap "tls" (ca.crt, tls.crt, client-id). The TLS files
// are self-signed test certificates (testdata/pki, made with
// openssl req -x509 -newkey ec): prometheus-operator parses them.
func diffCommonObjects(t *testing.T, kube kubernetes.Interface, ns string) {
	t.Helper()
	pem := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "pki", name))
		require.NoError(t, err)
		return string(b)
	}
	_, err := kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "auth"},
		StringData: map[string]string{
			"user": "admin", "pass": "s3cret", "tok": "t0ken", "client-id": "cid",
			"client-secret": "csecret", "proxy": "Basic eHg6eXk=",
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		StringData: map[string]string{"ca.crt": pem("secret-ca.crt"), "tls.crt": pem("client.crt"), "tls.key": pem("client.key")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		Data:       map[string]string{"ca.crt": pem("configmap-ca.crt"), "tls.crt": pem("client.crt"), "client-id": "cmcid"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// diffCounts are the totals of TestOperatorDifferential.
type diffCounts struct {
	// mu guards the counts, which the parallel cases add to.
	mu                                           sync.Mutex
	cases, jobs, identical, missing, extra, diff int
}

// TestOperatorDifferential compares, case by case, the scrape configs the
// Watcher generates with those prometheus-operator (v0.93) generates
// for a Prometheus object with the same selectors, selected the way its
// Prometheus controller does (pkg/prometheus/server/operator.go: a namespace
// informer from listwatch, informers from pkg/informers, NewResourceSelector
// over a StoreBuilder with a real client, AddScrapeClassesToStore, then
// GenerateServerConfiguration with the valid resources). Jobs are compared
// one by one as YAML, secrets revealed, after one normalisation that is
// shardwise's by design: prometheus-operator writes TLS CAs, certificates and
// keys to files under /etc/prometheus/certs and refers to them (ca_file,
// cert_file, key_file), while the allocator, which has no such files to hand
// to a collector, inlines their contents (ca, cert, key: the generator's
// WithInlineTLSConfig, as the upstream allocator does). The reference's file
// references are replaced by the contents of the files prometheus-operator
// would write (its store's TLSAssets). The reference Prometheus object asks for
// the EndpointSlice role where the allocator's configuration leaves
// service_discovery_role empty: the allocator's documented default
// (README, "Coming from prometheus-operator").
//
// Not parallel: it reveals secrets in YAML through the process-global
// commonconfig.MarshalSecretValue, which only this test's subtests may see.
func TestOperatorDifferential(t *testing.T) {
	cfg := testenv.Require(t, env)
	b, err := os.ReadFile(filepath.Join("testdata", "differential.yaml"))
	require.NoError(t, err)
	var cases []diffCase
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &cases))
	require.GreaterOrEqual(t, len(cases), 41)

	commonconfig.MarshalSecretValue = true
	t.Cleanup(func() { commonconfig.MarshalSecretValue = false })

	var counts diffCounts
	t.Run("cases", func(t *testing.T) {
		seen := map[string]bool{}
		for _, tc := range cases {
			require.False(t, seen[tc.Name], "duplicate case %s", tc.Name)
			seen[tc.Name] = true
			t.Run(tc.Name, func(t *testing.T) {
				t.Parallel()
				runDiffCase(t, cfg, tc, &counts)
			})
		}
	})
	t.Logf("differential: %d cases, %d jobs generated by prometheus-operator, %d identical, %d missing, %d extra, %d different",
		counts.cases, counts.jobs, counts.identical, counts.missing, counts.extra, counts.diff)
}

func runDiffCase(t *testing.T, cfg *rest.Config, tc diffCase, counts *diffCounts) {
	ns := "df-" + tc.Name
	other := ns + "-o"
	expand := func(s string) string {
		return strings.NewReplacer("$NS", ns, "$OTHER", other).Replace(s)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	c := newCtrlClient(t, cfg)
	for _, n := range []string{ns, other} {
		_, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"diffcase": n}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		diffCommonObjects(t, kube, n)
	}
	for doc := range strings.SplitSeq(expand(tc.Objects), "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			applyDoc(t, c, doc)
		}
	}

	conf := cmp.Or(tc.Config, diffDefaultConfig)
	parsed, err := allocatorconfig.ParseConfig([]byte(expand(conf)))
	require.NoError(t, err)

	want, err := referenceJobs(t.Context(), cfg, referencePrometheus(parsed.PrometheusCR, ns))
	require.NoError(t, err)
	wantJobs := make([]string, 0, len(tc.Jobs))
	for _, j := range tc.Jobs {
		wantJobs = append(wantJobs, expand(j))
	}
	require.ElementsMatch(t, wantJobs, slices.Collect(maps.Keys(want)), "the jobs prometheus-operator generates for this case")

	sink := newSinkRecorder()
	startOperatorWatcher(t, cfg, sink, WatcherOptions{Config: parsed.PrometheusCR, Namespace: ns})
	got := jobYAML(t, settled(t, sink, slices.Sorted(maps.Keys(want))), nil)

	counts.mu.Lock()
	counts.cases++
	counts.jobs += len(want)
	for job, w := range want {
		g, ok := got[job]
		switch {
		case !ok:
			counts.missing++
		case g == w:
			counts.identical++
		default:
			counts.diff++
		}
	}
	for job := range got {
		if _, ok := want[job]; !ok {
			counts.extra++
		}
	}
	counts.mu.Unlock()
	require.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)), "jobs of prometheus-operator (expected) and of the allocator (actual)")
	for _, job := range slices.Sorted(maps.Keys(want)) {
		require.Equal(t, want[job], got[job], "job %s of prometheus-operator (expected) and of the allocator (actual)", job)
	}
}

// settled returns the sink's last generation once its job names are want,
// or after 30s whatever it last received: the objects exist before the
// watcher starts, so its first generation normally covers them all, but a
// kind whose informer syncs late (a loaded machine) joins a later one. It
// fails only when nothing was generated at all.
func settled(t *testing.T, s *sinkRecorder, want []string) []*promconfig.ScrapeConfig {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		names := make([]string, 0, len(last))
		for _, sc := range last {
			names = append(names, sc.JobName)
		}
		slices.Sort(names)
		if last != nil && slices.Equal(names, want) {
			return last
		}
		select {
		case <-s.ch:
		case <-deadline:
			require.NotNil(t, last, "no generation")
			return last
		}
	}
}

// referencePrometheus is the Prometheus object a prometheus-operator user
// would write for the prometheus_cr block: the same selectors, scrape
// classes, protocols, intervals (the CRD defaults both to 30s) and
// arbitraryFSAccessThroughSMs and multi-tenancy switches, in the allocator's
// namespace.
func referencePrometheus(cr allocatorconfig.PrometheusCRConfig, ns string) *monitoringv1.Prometheus {
	role := cmp.Or(cr.ServiceDiscoveryRole, monitoringv1.EndpointSliceRole)
	interval := monitoringv1.Duration("30s")
	if cr.ScrapeInterval != 0 {
		interval = monitoringv1.Duration(cr.ScrapeInterval.String())
	}
	eval := monitoringv1.Duration("30s")
	if cr.EvaluationInterval != 0 {
		eval = monitoringv1.Duration(cr.EvaluationInterval.String())
	}
	return &monitoringv1.Prometheus{
		TypeMeta:   metav1.TypeMeta{Kind: monitoringv1.PrometheusesKind, APIVersion: monitoringv1.SchemeGroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{Name: "k8s", Namespace: ns},
		Spec: monitoringv1.PrometheusSpec{
			CommonPrometheusFields: monitoringv1.CommonPrometheusFields{
				ScrapeInterval:                  interval,
				ServiceMonitorSelector:          cr.ServiceMonitorSelector,
				ServiceMonitorNamespaceSelector: cr.ServiceMonitorNamespaceSelector,
				PodMonitorSelector:              cr.PodMonitorSelector,
				PodMonitorNamespaceSelector:     cr.PodMonitorNamespaceSelector,
				ProbeSelector:                   cr.ProbeSelector,
				ProbeNamespaceSelector:          cr.ProbeNamespaceSelector,
				ScrapeConfigSelector:            cr.ScrapeConfigSelector,
				ScrapeConfigNamespaceSelector:   cr.ScrapeConfigNamespaceSelector,
				ServiceDiscoveryRole:            &role,
				ScrapeProtocols:                 cr.ScrapeProtocols,
				ScrapeClasses:                   cr.ScrapeClasses,
				ArbitraryFSAccessThroughSMs:     monitoringv1.ArbitraryFSAccessThroughSMsConfig{Deny: cr.DenyFSAccessThroughSMs},
				IgnoreNamespaceSelectors:        cr.IgnoreNamespaceSelectors,
				EnforcedNamespaceLabel:          cr.EnforcedNamespaceLabel,
				EnforcedSampleLimit:             limit(cr.EnforcedSampleLimit),
				EnforcedTargetLimit:             limit(cr.EnforcedTargetLimit),
				EnforcedLabelLimit:              limit(cr.EnforcedLabelLimit),
				EnforcedLabelNameLengthLimit:    limit(cr.EnforcedLabelNameLengthLimit),
				EnforcedLabelValueLengthLimit:   limit(cr.EnforcedLabelValueLengthLimit),
				EnforcedBodySizeLimit:           monitoringv1.ByteSize(cr.EnforcedBodySizeLimit),
			},
			EvaluationInterval: eval,
		},
	}
}

// referenceJobs generates the jobs of p as prometheus-operator's Prometheus
// controller does (see TestOperatorDifferential), by job name.
func referenceJobs(ctx context.Context, cfg *rest.Config, p *monitoringv1.Prometheus) (map[string]string, error) {
	logger := slog.New(slog.DiscardHandler)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mon, err := monitoringclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	metrics := promoperator.NewMetrics(prometheusclient.NewRegistry())
	nsInf, infs, stop, err := referenceInformers(ctx, logger, kube, mon)
	if err != nil {
		return nil, err
	}
	defer stop()
	store := assets.NewStoreBuilder(kube.CoreV1(), kube.CoreV1())
	cg, err := prompkg.NewConfigGenerator(logger, p, prompkg.WithEndpointSliceSupport())
	if err != nil {
		return nil, fmt.Errorf("config generator: %w", err)
	}
	sel, err := prompkg.NewResourceSelector(logger, p, store, nsInf, metrics, promoperator.NewFakeRecorder(1000, p))
	if err != nil {
		return nil, fmt.Errorf("resource selector: %w", err)
	}
	sms, err := sel.SelectServiceMonitors(ctx, infs[KindServiceMonitor].ListAllByNamespace)
	if err != nil {
		return nil, err
	}
	pms, err := sel.SelectPodMonitors(ctx, infs[KindPodMonitor].ListAllByNamespace)
	if err != nil {
		return nil, err
	}
	probes, err := sel.SelectProbes(ctx, infs[KindProbe].ListAllByNamespace)
	if err != nil {
		return nil, err
	}
	scs, err := sel.SelectScrapeConfigs(ctx, infs[KindScrapeConfig].ListAllByNamespace)
	if err != nil {
		return nil, err
	}
	if err := prompkg.AddScrapeClassesToStore(ctx, store, p.Namespace, p.Spec.ScrapeClasses); err != nil {
		return nil, fmt.Errorf("scrape classes: %w", err)
	}
	out, err := cg.GenerateServerConfiguration(p, sms.ValidResources(), pms.ValidResources(), probes.ValidResources(),
		scs.ValidResources(), store, nil, nil, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	loaded, err := allocatorconfig.LoadPromConfig(out)
	if err != nil {
		return nil, err
	}
	return jobYAMLErr(loaded.ScrapeConfigs, store.TLSAssets())
}

func jobYAML(t *testing.T, scs []*promconfig.ScrapeConfig, tlsAssets map[string][]byte) map[string]string {
	t.Helper()
	m, err := jobYAMLErr(scs, tlsAssets)
	require.NoError(t, err)
	return m
}

// jobYAMLErr marshals each job to YAML with sorted keys, replacing
// references to prometheus-operator's TLS asset files with their contents.
func jobYAMLErr(scs []*promconfig.ScrapeConfig, tlsAssets map[string][]byte) (map[string]string, error) {
	out := make(map[string]string, len(scs))
	for _, sc := range scs {
		b, err := yaml.Marshal(sc)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", sc.JobName, err)
		}
		var tree any
		if err := sigsyaml.Unmarshal(b, &tree); err != nil {
			return nil, fmt.Errorf("read back %s: %w", sc.JobName, err)
		}
		if err := inlineTLSAssets(tree, tlsAssets); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.JobName, err)
		}
		b, err = sigsyaml.Marshal(tree)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", sc.JobName, err)
		}
		out[sc.JobName] = string(b)
	}
	return out, nil
}

// tlsAssetsDir is where prometheus-operator mounts the TLS assets it refers to.
const tlsAssetsDir = "/etc/prometheus/certs/"

// inlineTLSAssets replaces ca_file, cert_file and key_file values under
// tlsAssetsDir with ca, cert and key holding the file's content.
func inlineTLSAssets(tree any, assets map[string][]byte) error {
	switch v := tree.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			file, ok := v[k].(string)
			if !ok || !strings.HasSuffix(k, "_file") || !strings.HasPrefix(file, tlsAssetsDir) {
				if err := inlineTLSAssets(v[k], assets); err != nil {
					return err
				}
				continue
			}
			content, ok := assets[strings.TrimPrefix(file, tlsAssetsDir)]
			if !ok {
				return fmt.Errorf("%s %s: no such TLS asset", k, file)
			}
			delete(v, k)
			v[strings.TrimSuffix(k, "_file")] = string(content)
		}
	case []any:
		for _, e := range v {
			if err := inlineTLSAssets(e, assets); err != nil {
				return err
			}
		}
	}
	return nil
}

// referenceInformers starts prometheus-operator's own informers of the
// namespaces and the four kinds, cluster-wide, and waits for their caches;
// stop ends them.
func referenceInformers(ctx context.Context, logger *slog.Logger, kube kubernetes.Interface, mon monitoringclient.Interface) (cache.SharedIndexInformer, map[string]*informers.ForResource, func(), error) {
	all := map[string]struct{}{metav1.NamespaceAll: {}}

	lw, _, err := listwatch.NewNamespaceListWatchFromClient(ctx, logger, semver.MustParse("1.37.2"),
		kube.CoreV1(), kube.AuthorizationV1().SelfSubjectAccessReviews(), all, map[string]struct{}{})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("namespace list-watch: %w", err)
	}
	nsInf := cache.NewSharedIndexInformer(lw, &corev1.Namespace{}, 0, cache.Indexers{})
	factories := informers.NewMonitoringInformerFactories(all, map[string]struct{}{}, mon, 0, nil)
	infs := map[string]*informers.ForResource{}
	for _, gvr := range []struct{ kind, resource string }{
		{KindServiceMonitor, monitoringv1.ServiceMonitorName},
		{KindPodMonitor, monitoringv1.PodMonitorName},
		{KindProbe, monitoringv1.ProbeName},
		{KindScrapeConfig, monitoringv1alpha1.ScrapeConfigName},
	} {
		gv := monitoringv1.SchemeGroupVersion
		if gvr.kind == KindScrapeConfig {
			gv = monitoringv1alpha1.SchemeGroupVersion
		}
		infs[gvr.kind], err = informers.NewInformersForResource(factories, gv.WithResource(gvr.resource))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("informers for %s: %w", gvr.kind, err)
		}
	}
	stopCh := make(chan struct{})
	var wg sync.WaitGroup
	stop := func() {
		close(stopCh)
		wg.Wait()
	}
	wg.Go(func() { nsInf.Run(stopCh) })
	// Run what ForResource.Start would, but owned by wg.
	for _, inf := range infs {
		for _, i := range inf.GetInformers() {
			wg.Go(func() { i.Informer().Run(stopCh) })
		}
	}
	for _, inf := range infs {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			stop()
			return nil, nil, nil, ctx.Err()
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), nsInf.HasSynced) {
		stop()
		return nil, nil, nil, ctx.Err()
	}
	return nsInf, infs, stop, nil
}
