package relabel

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// operatorLikeJob is a job as prometheus-operator generates it for a
// ServiceMonitor, sharding rule included.
const operatorLikeJob = `
scrape_configs:
- job_name: %q
  relabel_configs:
  - source_labels: [job]
    target_label: __tmp_prometheus_job_name
  - action: keep
    source_labels: [__meta_kubernetes_service_label_app, __meta_kubernetes_service_labelpresent_app]
    regex: (web);true
  - action: keep
    source_labels: [__meta_kubernetes_endpointslice_port_name]
    regex: metrics
  - source_labels: [__meta_kubernetes_endpointslice_address_target_kind, __meta_kubernetes_endpointslice_address_target_name]
    separator: ;
    regex: Node;(.*)
    replacement: ${1}
    target_label: node
  - source_labels: [__meta_kubernetes_endpointslice_address_target_kind, __meta_kubernetes_endpointslice_address_target_name]
    separator: ;
    regex: Pod;(.*)
    replacement: ${1}
    target_label: pod
  - source_labels: [__meta_kubernetes_namespace]
    target_label: namespace
  - source_labels: [__meta_kubernetes_service_name]
    target_label: service
  - source_labels: [__meta_kubernetes_pod_container_name]
    target_label: container
  - source_labels: [__meta_kubernetes_pod_phase]
    regex: (Failed|Succeeded)
    action: drop
  - source_labels: [__meta_kubernetes_service_name]
    target_label: job
    replacement: ${1}
  - target_label: endpoint
    replacement: metrics
  - source_labels: [__address__, __tmp_hash]
    regex: (.+);
    target_label: __tmp_hash
    action: replace
  - source_labels: [__tmp_hash]
    target_label: __tmp_hash
    modulus: 3
    action: hashmod
  - source_labels: [__tmp_hash, __tmp_disable_sharding]
    regex: $(SHARD);|.+;.+
    action: keep
`

func loadJobs(t testing.TB, names ...string) map[string]*promconfig.ScrapeConfig {
	t.Helper()
	jobs := map[string]*promconfig.ScrapeConfig{}
	for _, n := range names {
		cfg, err := allocatorconfig.LoadPromConfig(fmt.Appendf(nil, operatorLikeJob, n))
		require.NoError(t, err)
		jobs[n] = cfg.ScrapeConfigs[0]
	}
	return jobs
}

// kubeTarget returns the labels of one endpointslice target with about 40
// meta labels, as Kubernetes SD produces them.
func kubeTarget(i int, app string) (model.LabelSet, model.LabelSet) {
	pod := fmt.Sprintf("web-%d-7d9f8c6b5-x%04d", i/50, i%10000)
	tl := model.LabelSet{
		"__address__": model.LabelValue(fmt.Sprintf("10.%d.%d.%d:8080", i>>16&255, i>>8&255, i&255)),
		"__meta_kubernetes_endpointslice_address_target_kind":             "Pod",
		"__meta_kubernetes_endpointslice_address_target_name":             model.LabelValue(pod),
		"__meta_kubernetes_endpointslice_endpoint_conditions_ready":       "true",
		"__meta_kubernetes_endpointslice_endpoint_conditions_serving":     "true",
		"__meta_kubernetes_endpointslice_endpoint_conditions_terminating": "false",
		"__meta_kubernetes_endpointslice_endpoint_node_name":              model.LabelValue(fmt.Sprintf("node-%d", i%20)),
		"__meta_kubernetes_endpointslice_endpoint_zone":                   "eu-west-1a",
		"__meta_kubernetes_endpointslice_port":                            "8080",
		"__meta_kubernetes_endpointslice_port_name":                       "metrics",
		"__meta_kubernetes_endpointslice_port_protocol":                   "TCP",
		"__meta_kubernetes_pod_container_image":                           "registry.example.com/web:1.24.3",
		"__meta_kubernetes_pod_container_name":                            "web",
		"__meta_kubernetes_pod_container_port_name":                       "metrics",
		"__meta_kubernetes_pod_container_port_number":                     "8080",
		"__meta_kubernetes_pod_container_port_protocol":                   "TCP",
		"__meta_kubernetes_pod_controller_kind":                           "ReplicaSet",
		"__meta_kubernetes_pod_controller_name":                           "web-7d9f8c6b5",
		"__meta_kubernetes_pod_host_ip":                                   "192.168.1.17",
		"__meta_kubernetes_pod_ip":                                        "10.1.2.3",
		"__meta_kubernetes_pod_label_app":                                 model.LabelValue(app),
		"__meta_kubernetes_pod_label_pod_template_hash":                   "7d9f8c6b5",
		"__meta_kubernetes_pod_labelpresent_app":                          "true",
		"__meta_kubernetes_pod_labelpresent_pod_template_hash":            "true",
		"__meta_kubernetes_pod_name":                                      model.LabelValue(pod),
		"__meta_kubernetes_pod_node_name":                                 model.LabelValue(fmt.Sprintf("node-%d", i%20)),
		"__meta_kubernetes_pod_phase":                                     "Running",
		"__meta_kubernetes_pod_ready":                                     "true",
		"__meta_kubernetes_pod_uid":                                       model.LabelValue(fmt.Sprintf("6f1c2b1e-0000-4000-8000-%012d", i)),
	}
	gl := model.LabelSet{
		"__meta_kubernetes_endpointslice_address_type":                                 "IPv4",
		"__meta_kubernetes_endpointslice_label_endpointslice_kubernetes_io_managed_by": "endpointslice-controller.k8s.io",
		"__meta_kubernetes_endpointslice_label_kubernetes_io_service_name":             "web",
		"__meta_kubernetes_endpointslice_labelpresent_kubernetes_io_service_name":      "true",
		"__meta_kubernetes_endpointslice_name":                                         "web-abcde",
		"__meta_kubernetes_namespace":                                                  "shop",
		"__meta_kubernetes_service_annotation_prometheus_io_scrape":                    "true",
		"__meta_kubernetes_service_annotationpresent_prometheus_io_scrape":             "true",
		"__meta_kubernetes_service_label_app":                                          model.LabelValue(app),
		"__meta_kubernetes_service_labelpresent_app":                                   "true",
		"__meta_kubernetes_service_name":                                               "web",
	}
	return tl, gl
}

// kubeGroups returns the groups of one job: n targets in groups of 100.
func kubeGroups(job string, n int) []*targetgroup.Group {
	var tgs []*targetgroup.Group
	for start := 0; start < n; start += 100 {
		tg := &targetgroup.Group{Source: fmt.Sprintf("endpointslice/%s/%d", job, start)}
		for i := start; i < min(n, start+100); i++ {
			tl, gl := kubeTarget(i, "web")
			tg.Targets = append(tg.Targets, tl)
			tg.Labels = gl
		}
		tgs = append(tgs, tg)
	}
	return tgs
}

func TestFilter(t *testing.T) {
	t.Parallel()
	const job = "serviceMonitor/shop/web/0"
	target := func(mut func(tl, gl model.LabelSet)) []*targetgroup.Group {
		tl, gl := kubeTarget(1, "web")
		if mut != nil {
			mut(tl, gl)
		}
		return []*targetgroup.Group{{Source: "s", Targets: []model.LabelSet{tl}, Labels: gl}}
	}
	base := NewFilter(allocatorconfig.FilterRelabelConfig)
	base.ApplyConfig(loadJobs(t, job))
	baseTargets := base.Process(map[string][]*targetgroup.Group{job: target(nil)})[job]
	require.Len(t, baseTargets, 1, "the sharding rule must not drop targets")
	baseHash := baseTargets[0].Hash

	for _, tc := range []struct {
		name     string
		strategy string
		mut      func(tl, gl model.LabelSet)
		kept     bool
		sameHash bool
	}{
		{name: "meta label change keeps identity", mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_pod_uid"] = "other"
		}, kept: true, sameHash: true},
		{name: "relabeled label change changes identity", mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_pod_container_name"] = "sidecar"
		}, kept: true},
		{name: "dropped by keep on port", mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_endpointslice_port_name"] = "http"
		}},
		{name: "dropped by drop on phase", mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_pod_phase"] = "Succeeded"
		}},
		{name: "group label overridden by target", mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_service_label_app"] = "db"
		}},
		{name: "seeded metrics path is part of identity", mut: func(tl, _ model.LabelSet) {
			tl["__metrics_path__"] = "/other"
		}, kept: true},
		{name: "explicit default metrics path is the same target", mut: func(tl, _ model.LabelSet) {
			tl["__metrics_path__"] = "/metrics"
		}, kept: true, sameHash: true},
		{name: "filter none keeps dropped targets", strategy: allocatorconfig.FilterNone, mut: func(tl, _ model.LabelSet) {
			tl["__meta_kubernetes_pod_phase"] = "Succeeded"
		}, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := NewFilter(tc.strategy)
			f.ApplyConfig(loadJobs(t, job))
			got := f.Process(map[string][]*targetgroup.Group{job: target(tc.mut)})
			require.Contains(t, got, job)
			if !tc.kept {
				require.Empty(t, got[job])
				return
			}
			require.Len(t, got[job], 1)
			tg := got[job][0]
			require.Equal(t, job, tg.Job)
			require.Equal(t, "10.0.0.1:8080", tg.Address)
			require.Equal(t, "node-1", tg.Node)
			require.Equal(t, "shop", tg.Labels.Get("__meta_kubernetes_namespace"), "served labels include group labels")
			require.Empty(t, tg.Labels.Get("namespace"), "served labels are pre-relabel")
			require.Empty(t, tg.Labels.Get("job"), "served labels are not seeded")
			if tc.strategy == "" {
				require.Equal(t, tc.sameHash, tg.Hash == baseHash)
			}
		})
	}
}

// TestFilterNode checks that targets carry the node their discovered labels
// name (nodeOf), whether the labels are the target's own or its
// group's.
func TestFilterNode(t *testing.T) {
	t.Parallel()
	const (
		podNode    = "__meta_kubernetes_pod_node_name"
		nodeName   = "__meta_kubernetes_node_name"
		epNode     = "__meta_kubernetes_endpoint_node_name"
		sliceKind  = "__meta_kubernetes_endpointslice_address_target_kind"
		sliceName  = "__meta_kubernetes_endpointslice_address_target_name"
		sliceEPNod = "__meta_kubernetes_endpointslice_endpoint_node_name"
	)
	for _, tc := range []struct {
		name string
		ls   model.LabelSet
		want string
	}{
		{"pod", model.LabelSet{podNode: "a", epNode: "b"}, "a"},
		{"node role", model.LabelSet{nodeName: "n"}, "n"},
		{"endpoints", model.LabelSet{epNode: "b"}, "b"},
		{"endpointslice node target", model.LabelSet{sliceKind: "Node", sliceName: "n2"}, "n2"},
		{"endpointslice pod target", model.LabelSet{sliceKind: "Pod", sliceName: "p"}, ""},
		{"endpointslice endpoint node", model.LabelSet{sliceKind: "Pod", sliceEPNod: "n3"}, "n3"},
		{"none", model.LabelSet{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			own := model.LabelSet{"__address__": "a:1"}
			for _, g := range []*targetgroup.Group{
				{Source: "own", Targets: []model.LabelSet{tc.ls.Merge(own)}},
				{Source: "group", Targets: []model.LabelSet{own}, Labels: tc.ls},
			} {
				f := NewFilter(allocatorconfig.FilterNone)
				f.ApplyConfig(loadJobs(t, "j"))
				got := f.Process(map[string][]*targetgroup.Group{"j": {g}})["j"]
				require.Len(t, got, 1)
				require.Equal(t, tc.want, got[0].Node, g.Source)
			}
		})
	}
}

func TestFilterDuplicateIdentity(t *testing.T) {
	t.Parallel()
	const job = "j"
	f := NewFilter(allocatorconfig.FilterRelabelConfig)
	f.ApplyConfig(loadJobs(t, job))
	tl1, gl := kubeTarget(1, "web")
	tl2, _ := kubeTarget(1, "web")
	tl2["__meta_kubernetes_pod_uid"] = "second"
	first := f.Process(map[string][]*targetgroup.Group{job: {{Source: "a", Targets: []model.LabelSet{tl1}, Labels: gl}}})[job]
	require.Len(t, first, 1)

	// A second discovered target with the same identity appears: one target,
	// with the newest labels.
	got := f.Process(map[string][]*targetgroup.Group{job: {
		{Source: "a", Targets: []model.LabelSet{tl1}, Labels: gl},
		{Source: "b", Targets: []model.LabelSet{tl2}, Labels: gl},
	}})[job]
	require.Len(t, got, 1)
	require.Equal(t, first[0].Hash, got[0].Hash)
	require.Equal(t, "second", got[0].Labels.Get("__meta_kubernetes_pod_uid"))
}

// TestFilterPieces checks that a job cut into pieces (one group larger than
// a piece, duplicates of one identity in different pieces) gives the result
// of the same targets in small groups.
func TestFilterPieces(t *testing.T) {
	t.Parallel()
	const job = "j"
	n := 2*pieceTargets + 100
	_, gl := kubeTarget(0, "web")
	big := &targetgroup.Group{Source: "big", Labels: gl}
	for i := range n {
		tl, _ := kubeTarget(i%(pieceTargets+50), "web") // targets 0-49 come twice, a piece apart
		if i >= pieceTargets+50 {
			tl["__meta_kubernetes_pod_uid"] = "second" // the later copy differs in a meta label only
		}
		big.Targets = append(big.Targets, tl)
	}
	var small []*targetgroup.Group
	for lo := 0; lo < n; lo += 100 {
		small = append(small, &targetgroup.Group{Source: fmt.Sprint(lo), Labels: gl, Targets: big.Targets[lo:min(n, lo+100)]})
	}
	one := NewFilter(allocatorconfig.FilterRelabelConfig)
	one.ApplyConfig(loadJobs(t, job))
	got := one.Process(map[string][]*targetgroup.Group{job: {big}})[job]
	many := NewFilter(allocatorconfig.FilterRelabelConfig)
	many.ApplyConfig(loadJobs(t, job))
	want := many.Process(map[string][]*targetgroup.Group{job: small})[job]

	require.Len(t, got, pieceTargets+50, "one target per identity")
	require.Len(t, want, len(got))
	for i := range got {
		require.Equal(t, want[i].Hash, got[i].Hash)
		require.Equal(t, want[i].Labels.Map(), got[i].Labels.Map())
	}
}

func TestFilterSkipsUnchanged(t *testing.T) {
	t.Parallel()
	f := NewFilter(allocatorconfig.FilterRelabelConfig)
	f.ApplyConfig(loadJobs(t, "a", "b"))
	ga, gb := kubeGroups("a", 300), kubeGroups("b", 200)
	got := f.Process(map[string][]*targetgroup.Group{"a": ga, "b": gb})
	require.Len(t, got["a"], 300)
	require.Len(t, got["b"], 200)

	require.Empty(t, f.Process(map[string][]*targetgroup.Group{"a": ga, "b": gb}), "same groups: nothing to do")

	// New group objects with the same content: recomputed, unchanged, not reported.
	require.Empty(t, f.Process(map[string][]*targetgroup.Group{"a": kubeGroups("a", 300), "b": gb}))

	// One target fewer in b.
	got = f.Process(map[string][]*targetgroup.Group{"a": ga, "b": kubeGroups("b", 199)})
	require.Equal(t, []string{"b"}, keys(got))
	require.Len(t, got["b"], 199)

	// b disappears from the config: reported once with no targets.
	f.ApplyConfig(loadJobs(t, "a"))
	got = f.Process(map[string][]*targetgroup.Group{"a": ga, "b": gb})
	require.Equal(t, map[string][]*allocation.Target{"b": {}}, got)
	require.Empty(t, f.Process(map[string][]*targetgroup.Group{"a": ga}))

	// A new job with no groups yet is reported empty.
	f.ApplyConfig(loadJobs(t, "a", "c"))
	got = f.Process(map[string][]*targetgroup.Group{"a": ga})
	require.Equal(t, map[string][]*allocation.Target{"c": {}}, got)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkFilter measures the filter: a full pass over fresh target groups
// (nothing reusable) and an update of one job of 1000 targets. (It was
// BenchmarkPipeline, the name of the benchmarks package's end-to-end
// benchmark, which benchmarks/cmd/benchplot reads.)
func BenchmarkFilter(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		const jobsN = 100
		names := make([]string, jobsN)
		for i := range names {
			names[i] = fmt.Sprintf("serviceMonitor/shop/web/%d", i)
		}
		jobs := loadJobs(b, names...)
		groups := map[string][]*targetgroup.Group{}
		for _, name := range names {
			groups[name] = kubeGroups(name, n/jobsN)
		}
		b.Run(fmt.Sprintf("full/targets=%d", n), func(b *testing.B) { benchFullPass(b, jobs, groups, n) })
	}
	// One job holds every target, as a cluster-wide kubernetes-pods job does.
	b.Run("full-one-job/targets=100000", func(b *testing.B) {
		const n = 100_000
		jobs := loadJobs(b, "kubernetes-pods")
		groups := map[string][]*targetgroup.Group{"kubernetes-pods": kubeGroups("kubernetes-pods", n)}
		benchFullPass(b, jobs, groups, n)
	})
	b.Run("one-job/targets=1000", func(b *testing.B) {
		// Each variant has one target changed: every pass sees new groups
		// and one changed target.
		benchOneJob(b, func(v int, tgs []*targetgroup.Group) {
			tgs[0].Targets[0]["__meta_kubernetes_pod_container_name"] = model.LabelValue([]string{"a", "b"}[v])
		}, true)
	})
	b.Run("one-job-all-new/targets=1000", func(b *testing.B) {
		// Every discovered label set differs between the two variants (a
		// meta label), so nothing is reused: the worst case of a job update.
		benchOneJob(b, func(v int, tgs []*targetgroup.Group) {
			for _, tg := range tgs {
				for _, tl := range tg.Targets {
					tl["__meta_kubernetes_pod_uid"] = model.LabelValue(fmt.Sprint(v))
				}
			}
		}, false)
	})
}

// benchOneJob measures passes in which one job of 100 (1000 targets each)
// alternates between two fresh group sets, each changed by mutate; check
// requires that the job keeps its 1000 targets.
func benchOneJob(b *testing.B, mutate func(v int, tgs []*targetgroup.Group), check bool) {
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("j%d", i)
	}
	groups := map[string][]*targetgroup.Group{}
	for _, name := range names {
		groups[name] = kubeGroups(name, 1000)
	}
	f := NewFilter(allocatorconfig.FilterRelabelConfig)
	f.ApplyConfig(loadJobs(b, names...))
	f.Process(groups)
	variants := [2][]*targetgroup.Group{kubeGroups("j0", 1000), kubeGroups("j0", 1000)}
	for v, tgs := range variants {
		mutate(v, tgs)
	}
	b.ReportAllocs()
	i := 0
	mem := startMem()
	for b.Loop() {
		i++
		groups["j0"] = variants[i%2]
		if got := f.Process(groups); check && len(got["j0"]) != 1000 {
			b.Fatalf("got %d targets", len(got["j0"]))
		}
	}
	reportPerTarget(b, 1000, mem)
}

// benchFullPass measures passes of a new filter over groups, which hold n
// targets that the jobs all keep.
func benchFullPass(b *testing.B, jobs map[string]*promconfig.ScrapeConfig, groups map[string][]*targetgroup.Group, n int) {
	b.ReportAllocs()
	kept := 0
	mem := startMem()
	for b.Loop() {
		f := NewFilter(allocatorconfig.FilterRelabelConfig)
		f.ApplyConfig(jobs)
		kept = 0
		for _, ts := range f.Process(groups) {
			kept += len(ts)
		}
	}
	require.Equal(b, n, kept)
	reportPerTarget(b, n, mem)
}

func startMem() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

func reportPerTarget(b *testing.B, n int, startAlloc uint64) {
	b.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	perOp := float64(b.N) * float64(n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perOp, "ns/target")
	b.ReportMetric(float64(ms.TotalAlloc-startAlloc)/perOp, "B/target")
}
