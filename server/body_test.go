package server

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/allocation"
)

// kubeSlice returns a slice of n targets with the labels Kubernetes
// EndpointSlice discovery gives a pod of a Helm-deployed Deployment: 8 pod
// labels and 4 annotations (each with its _present twin), the slice's,
// service's and container's labels; 56 labels in all.
func kubeSlice(n int) *allocation.Slice {
	sl := &allocation.Slice{}
	for i := range n {
		addr := fmt.Sprintf("10.1.%d.%d:9090", i>>8&255, i&255)
		kv := []string{
			"__address__", addr,
			"__meta_kubernetes_namespace", "team-03",
			"__meta_kubernetes_service_name", "svc-042",
			"__meta_kubernetes_service_label_app_kubernetes_io_name", "svc-042",
			"__meta_kubernetes_service_labelpresent_app_kubernetes_io_name", "true",
			"__meta_kubernetes_endpointslice_name", fmt.Sprintf("svc-042-%d", i/100),
			"__meta_kubernetes_endpointslice_address_type", "IPv4",
			"__meta_kubernetes_endpointslice_endpoint_conditions_ready", "true",
			"__meta_kubernetes_endpointslice_endpoint_conditions_serving", "true",
			"__meta_kubernetes_endpointslice_endpoint_conditions_terminating", "false",
			"__meta_kubernetes_endpointslice_endpoint_node_name", fmt.Sprintf("node-%03d", i%97),
			"__meta_kubernetes_endpointslice_port", "9090",
			"__meta_kubernetes_endpointslice_port_name", "metrics",
			"__meta_kubernetes_endpointslice_port_protocol", "TCP",
			"__meta_kubernetes_pod_name", fmt.Sprintf("svc-042-7d9f8b6c5-%05x", i*7919),
			"__meta_kubernetes_pod_ip", strings.TrimSuffix(addr, ":9090"),
			"__meta_kubernetes_pod_node_name", fmt.Sprintf("node-%03d", i%97),
			"__meta_kubernetes_pod_host_ip", fmt.Sprintf("192.168.%d.%d", i%97/256, i%97),
			"__meta_kubernetes_pod_ready", "true",
			"__meta_kubernetes_pod_phase", "Running",
			"__meta_kubernetes_pod_uid", fmt.Sprintf("0b6c%04x-1f2e-4d3c-9b8a-%012x", i, i*104729),
			"__meta_kubernetes_pod_controller_kind", "ReplicaSet",
			"__meta_kubernetes_pod_controller_name", "svc-042-7d9f8b6c5",
			"__meta_kubernetes_pod_container_name", "app",
			"__meta_kubernetes_pod_container_image", "registry.example.com/team-03/svc-042:1.14.2",
			"__meta_kubernetes_pod_container_port_name", "metrics",
			"__meta_kubernetes_pod_container_port_number", "9090",
			"__meta_kubernetes_pod_container_port_protocol", "TCP",
			"__meta_kubernetes_pod_container_init", "false",
		}
		for _, l := range [][2]string{
			{"app_kubernetes_io_name", "svc-042"}, {"app_kubernetes_io_instance", "svc-042"},
			{"app_kubernetes_io_version", "1.14.2"}, {"app_kubernetes_io_component", "server"},
			{"app_kubernetes_io_part_of", "team-03"}, {"app_kubernetes_io_managed_by", "Helm"},
			{"helm_sh_chart", "svc-1.14.2"}, {"pod_template_hash", "7d9f8b6c5"},
		} {
			kv = append(kv, "__meta_kubernetes_pod_label_"+l[0], l[1], "__meta_kubernetes_pod_labelpresent_"+l[0], "true")
		}
		for _, a := range [][2]string{
			{"kubectl_kubernetes_io_restartedAt", "2026-11-30T08:00:00Z"},
			{"checksum_config", "5f0c4e6ad2b1c0e1d89a7f3b24e96e0a1c9d0f3a7e8b6c5d4e3f2a1b0c9d8e7f"},
			{"kubectl_kubernetes_io_default_container", "app"},
			{"cluster_autoscaler_kubernetes_io_safe_to_evict", "true"},
		} {
			kv = append(kv, "__meta_kubernetes_pod_annotation_"+a[0], a[1], "__meta_kubernetes_pod_annotationpresent_"+a[0], "true")
		}
		sl.Targets = append(sl.Targets, &allocation.Target{Address: addr, Labels: discovered(kv...)})
	}
	return sl
}

// TestBody: a body serves exactly the bytes it was built from, whether it
// keeps them as they are (small) or compressed, through both writeTo and
// appendTo, with the entity tag of those bytes; building the next body in
// the reused scratch buffer leaves it intact; a Kubernetes slice is kept in
// a small fraction of its size.
func TestBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		sl         *allocation.Slice
		compressed bool
	}{
		{"small", &allocation.Slice{Targets: []*allocation.Target{mkTarget("a", "10.0.0.1:9100")}}, false},
		{"100 targets", kubeSlice(100), true},
		{"1000 targets", kubeSlice(1000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := appendSlice(nil, tc.sl)
			b := encode(sliceSize(tc.sl), func(buf []byte) []byte { return appendSlice(buf, tc.sl) })
			// Another body built right after may reuse the scratch buffer.
			other := encode(0, func(buf []byte) []byte { return append(buf, strings.Repeat("x", len(want))...) })

			require.Equal(t, tc.compressed, b.gz != nil, "compressed")
			require.Equal(t, len(want), b.size)
			var w bytes.Buffer
			require.NoError(t, b.writeTo(&w))
			require.Equal(t, string(want), w.String())
			require.Equal(t, string(want), string(b.appendTo(nil)))
			require.Equal(t, "pre"+string(want), string(b.appendTo([]byte("pre"))))
			require.Equal(t, []string{`"` + strconv.FormatUint(xxhash.Sum64(want), 36) + `"`}, b.etag)
			if tc.compressed {
				require.Less(t, b.stored(), len(want)/10, "a Kubernetes slice compresses at least tenfold")
			}
			require.Equal(t, strings.Repeat("x", len(want)), string(other.appendTo(nil)))
		})
	}
}

// BenchmarkBody measures a cached http_sd body of 1,000 Kubernetes targets:
// building it (encode and compress, once per slice version), the bytes the
// cache keeps per target, and serving it (expanding it into the response).
func BenchmarkBody(b *testing.B) {
	sl := kubeSlice(1000)
	n := float64(len(sl.Targets))
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		var bd *body
		for b.Loop() {
			bd = encode(sliceSize(sl), func(buf []byte) []byte { return appendSlice(buf, sl) })
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/target")
		b.ReportMetric(float64(bd.stored())/n, "B/target")
		b.ReportMetric(float64(bd.size)/n, "json-B/target")
	})
	b.Run("serve", func(b *testing.B) {
		b.ReportAllocs()
		bd := encode(sliceSize(sl), func(buf []byte) []byte { return appendSlice(buf, sl) })
		w := &discardWriter{}
		for b.Loop() {
			if err := bd.writeTo(w); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/target")
	})
}
