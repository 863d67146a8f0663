package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// Heap is the allocator's live heap after a GC, from /debug/pprof/heap,
// split by what allocated each byte still in use (the first class whose
// prefix a frame of the allocating stack has, in this order).
type Heap struct {
	TotalMiB float64 `json:"total_mib"`
	// InformerMiB is the API objects client-go's informers hold: decoded by
	// a reflector's list or watch (tools/cache, watch decoding), for
	// Prometheus' Kubernetes SD and the allocator's own few informers.
	InformerMiB float64 `json:"informer_cache_mib"`
	// PrometheusSDMiB is what Prometheus' discovery code built from them:
	// target groups of the Kubernetes SD and its discovery manager, with
	// the label maps shardwise trims them to as they arrive.
	PrometheusSDMiB float64 `json:"prometheus_sd_mib"`
	// ShardwiseMiB is the allocator's own state: the relabel filter's
	// targets, the allocation, the server's response cache.
	ShardwiseMiB float64 `json:"shardwise_mib"`
	// OtherMiB is the rest (runtime, other libraries).
	OtherMiB float64 `json:"other_mib"`
}

var heapClasses = []struct {
	prefixes []string
	field    func(*Heap) *float64
}{
	{[]string{"k8s.io/client-go/tools/cache.", "k8s.io/apimachinery/pkg/watch.", "k8s.io/client-go/rest/watch.", "k8s.io/client-go/tools/pager."}, func(h *Heap) *float64 { return &h.InformerMiB }},
	{[]string{"github.com/prometheus/prometheus/discovery", "github.com/shardwise/shardwise/discovery.(*labelTrimmer)"}, func(h *Heap) *float64 { return &h.PrometheusSDMiB }},
	{[]string{"github.com/shardwise/shardwise/"}, func(h *Heap) *float64 { return &h.ShardwiseMiB }},
}

// heapProfile reads the allocator's heap profile (enable_pprof) after a GC
// and classifies its in-use bytes; it also returns the raw profile.
func (p *poller) heapProfile(ctx context.Context) (Heap, []byte, error) {
	b, err := p.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return Heap{}, nil, err
	}
	h, err := classifyHeap(b)
	return h, b, err
}

func classifyHeap(b []byte) (Heap, error) {
	prof, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		return Heap{}, fmt.Errorf("parse heap profile: %w", err)
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return Heap{}, fmt.Errorf("heap profile has no inuse_space")
	}
	var h Heap
	for _, s := range prof.Sample {
		v := mib(s.Value[idx])
		h.TotalMiB += v
		*classOf(&h, s) += v
	}
	for _, f := range []*float64{&h.TotalMiB, &h.InformerMiB, &h.PrometheusSDMiB, &h.ShardwiseMiB, &h.OtherMiB} {
		*f = round(*f, 1)
	}
	return h, nil
}

func classOf(h *Heap, s *profile.Sample) *float64 {
	for _, c := range heapClasses {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for _, p := range c.prefixes {
					if strings.HasPrefix(line.Function.Name, p) {
						return c.field(h)
					}
				}
			}
		}
	}
	return &h.OtherMiB
}
