package controller_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

var (
	benchConfigMaps    = flag.Int("cache-bench-configmaps", 1000, "labelled ConfigMaps BenchmarkOperatorCache creates")
	benchConfigMapSize = flag.Int("cache-bench-configmap-bytes", 1_000_000, "bytes of data in each of them")
	benchCollectors    = flag.Int("cache-bench-collectors", 1000, "collectors BenchmarkOperatorCache creates")
)

// BenchmarkOperatorCache measures what the operator's informers hold for
// what a tenant can create in its namespace: ConfigMaps carrying the
// operator's managed-by label (which anyone may set), with the cache options
// of cmd/operator (controller.CacheByObject) and without the transform that
// drops their data, and collectors. It reports the Go heap retained per
// object after the cache has synced, B/configmap and B/collector.
//
//	KUBEBUILDER_ASSETS=$(./hack/envtest.sh) go test -run '^$' -bench OperatorCache -benchtime 1x ./internal/controller/
func BenchmarkOperatorCache(b *testing.B) {
	cfg := testenv.Require(b, env)
	scheme, err := controller.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	c := testenv.Client(b, cfg, scheme)
	const ns = "bench-operator-cache"
	testenv.Namespace(b, c, ns, nil)
	ctx := b.Context()
	data := strings.Repeat("x", *benchConfigMapSize)
	for i := range *benchConfigMaps {
		err := c.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("forged-%05d", i), Labels: map[string]string{manifests.LabelManagedBy: manifests.ManagedBy}},
			Data:       map[string]string{"data": data},
		})
		if err != nil {
			b.Fatalf("create ConfigMap %d: %v", i, err)
		}
	}
	for i := range *benchCollectors {
		col := &v1beta1.OpenTelemetryCollector{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("collector-%05d", i)}}
		col.Spec.Mode = v1beta1.ModeDeployment
		col.Spec.Config = benchCollectorConfig(b)
		if err := c.Create(ctx, col); err != nil {
			b.Fatalf("create collector %d: %v", i, err)
		}
	}
	stripped := controller.CacheByObject()
	whole := map[client.Object]cache.ByObject{}
	for o, by := range stripped {
		by.Transform = nil
		whole[o] = by
	}
	for _, tc := range []struct {
		name   string
		byObj  map[client.Object]cache.ByObject
		list   client.ObjectList
		count  int
		metric string
	}{
		{"configmaps/operator", stripped, &corev1.ConfigMapList{}, *benchConfigMaps, "B/configmap"},
		{"configmaps/untransformed", whole, &corev1.ConfigMapList{}, *benchConfigMaps, "B/configmap"},
		{"collectors", stripped, &v1beta1.OpenTelemetryCollectorList{}, *benchCollectors, "B/collector"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				before := heapInUse()
				ca, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: tc.byObj, DefaultNamespaces: map[string]cache.Config{ns: {}}})
				if err != nil {
					b.Fatal(err)
				}
				testenv.Run(b, ca.Start)
				if !ca.WaitForCacheSync(ctx) {
					b.Fatal("cache did not sync")
				}
				// The informers hold the objects; what a List copies out
				// is garbage by the time the heap is read.
				if err := ca.List(ctx, tc.list.DeepCopyObject().(client.ObjectList)); err != nil {
					b.Fatal(err)
				}
				after := heapInUse()
				runtime.KeepAlive(ca)
				b.ReportMetric(float64(after-before)/float64(tc.count), tc.metric)
			}
		})
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// benchCollectorConfig is a collector configuration of ordinary size: an
// OTLP receiver, a batch processor and an OTLP exporter.
func benchCollectorConfig(b *testing.B) v1beta1.Config {
	b.Helper()
	var c v1beta1.Config
	raw := []byte(`{"receivers":{"otlp":{"protocols":{"grpc":{},"http":{}}}},"processors":{"batch":{}},` +
		`"exporters":{"otlp":{"endpoint":"backend.observability:4317"}},` +
		`"service":{"pipelines":{"traces":{"receivers":["otlp"],"processors":["batch"],"exporters":["otlp"]}}}}`)
	if err := json.Unmarshal(raw, &c); err != nil {
		b.Fatal(err)
	}
	return c
}
