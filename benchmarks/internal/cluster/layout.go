package cluster

import (
	"fmt"
	"strconv"

	"github.com/cespare/xxhash/v2"
)

// Layout is the cluster a run creates, before any of it exists: workloads
// (a Deployment's pods, its Service and EndpointSlices, one ServiceMonitor)
// and collector pods, split between allocators.
type Layout struct {
	Allocators []AllocatorLayout
	// nextIP is the index of the next pod address to hand out.
	nextIP int
}

// AllocatorLayout is what one allocator selects: its ServiceMonitors (one
// per workload, labelled with the allocator's name) and its collector pods.
type AllocatorLayout struct {
	Name       string // "a0", "a1", ...: the ServiceMonitor and collector label value
	Namespace  string // where its collector pods run
	Workloads  []*Workload
	Collectors []string
}

// Workload is a Deployment without a controller: its pods, selected by a
// Service of the same name, listed in EndpointSlices of at most
// EndpointsPerSlice endpoints, and the ServiceMonitor that scrapes its
// metrics port.
type Workload struct {
	Namespace, Name string
	Allocator       string
	// Generation is the pod template's generation: a rolling update bumps
	// it and new pods carry its hash.
	Generation int
	Pods       []Pod
}

// Pod is one replica of a workload.
type Pod struct {
	Name, IP, UID, Node string
}

// Job is the scrape job prometheus-operator generates for the workload's
// ServiceMonitor (its first and only endpoint).
func (w *Workload) Job() string { return "serviceMonitor/" + w.Namespace + "/" + w.Name + "/0" }

// Targets is the set of addresses the job keeps: every pod's metrics port.
func (w *Workload) Targets() map[string]bool {
	out := make(map[string]bool, len(w.Pods))
	for _, p := range w.Pods {
		out[p.IP+":"+strconv.Itoa(MetricsPort)] = true
	}
	return out
}

const (
	// EndpointsPerSlice is the EndpointSlice controller's default maximum.
	EndpointsPerSlice = 100
	// MetricsPort and HTTPPort are every workload pod's container ports; the
	// Service and its EndpointSlices carry both, the ServiceMonitor scrapes
	// metrics, so half of the discovered targets are dropped by relabeling.
	MetricsPort = 9090
	// HTTPPort is the application port next to MetricsPort.
	HTTPPort = 8080
	// podsPerNode is how densely pods are packed on (fictitious) nodes.
	podsPerNode = 110
	// maxNamespaces is the number of team namespaces per allocator.
	maxNamespaces = 10
	// AllocatorLabel marks ServiceMonitors and collector pods with the name
	// of the allocator that selects them.
	AllocatorLabel = "bench.shardwise.io/allocator"
)

// NewLayout splits targets pods into monitors workloads and collectors
// collector pods over allocators allocators (each gets an equal share, the
// first ones the remainder). The first workload of the first allocator is
// the rollout Deployment with rolloutPods pods (at most half of that
// allocator's pods when it has other workloads); the others share the rest.
func NewLayout(targets, monitors, collectors, allocators, rolloutPods int) (*Layout, error) {
	switch {
	case allocators < 1:
		return nil, fmt.Errorf("allocators must be positive, got %d", allocators)
	case monitors < allocators:
		return nil, fmt.Errorf("monitors (%d) must be at least the number of allocators (%d)", monitors, allocators)
	case collectors < allocators:
		return nil, fmt.Errorf("collectors (%d) must be at least the number of allocators (%d)", collectors, allocators)
	case targets < monitors:
		return nil, fmt.Errorf("targets (%d) must be at least the number of monitors (%d)", targets, monitors)
	case rolloutPods < 1:
		return nil, fmt.Errorf("rollout pods must be positive, got %d", rolloutPods)
	}
	l := &Layout{}
	share := func(total, i int) int { return total/allocators + btoi(i < total%allocators) }
	for k := range allocators {
		a := AllocatorLayout{Name: "a" + strconv.Itoa(k), Namespace: fmt.Sprintf("a%d-observability", k)}
		for c := range share(collectors, k) {
			a.Collectors = append(a.Collectors, fmt.Sprintf("a%d-collector-%d", k, c))
		}
		m, n := share(monitors, k), share(targets, k)
		nss := min(m, maxNamespaces)
		sizes := make([]int, m)
		rest := n
		if k == 0 {
			first := min(rolloutPods, n)
			if m > 1 {
				first = min(first, n/2)
			}
			sizes[0], rest = first, n-first
		}
		others := sizes[btoi(k == 0):]
		for i := range others {
			others[i] = rest/len(others) + btoi(i < rest%len(others))
		}
		for i, size := range sizes {
			w := &Workload{
				Namespace: fmt.Sprintf("a%d-team-%02d", k, i%nss),
				Name:      fmt.Sprintf("svc-%03d", i),
				Allocator: a.Name,
			}
			w.Pods = l.newPods(w, size)
			a.Workloads = append(a.Workloads, w)
		}
		l.Allocators = append(l.Allocators, a)
	}
	return l, nil
}

// Rollout is the workload the rolling update replaces: the first of the
// first allocator.
func (l *Layout) Rollout() *Workload { return l.Allocators[0].Workloads[0] }

// Pods is the number of workload pods.
func (l *Layout) Pods() int {
	n := 0
	for _, a := range l.Allocators {
		for _, w := range a.Workloads {
			n += len(w.Pods)
		}
	}
	return n
}

// newPods returns n new pods of w's current generation, with addresses no
// pod had before.
func (l *Layout) newPods(w *Workload, n int) []Pod {
	hash := w.templateHash()
	out := make([]Pod, n)
	for i := range out {
		ip := l.nextIP
		l.nextIP++
		out[i] = Pod{
			Name: w.Name + "-" + hash + "-" + suffix(uint64(ip)),
			IP:   fmt.Sprintf("10.%d.%d.%d", 64+(ip>>16)&0x3f, (ip>>8)&0xff, ip&0xff),
			UID:  fmt.Sprintf("00000000-0000-4000-8000-%012x", ip),
			Node: fmt.Sprintf("node-%04d", ip/podsPerNode),
		}
	}
	return out
}

// templateHash is the pod-template-hash of the workload's generation.
func (w *Workload) templateHash() string {
	h := xxhash.Sum64String(fmt.Sprintf("%s/%s/%d", w.Namespace, w.Name, w.Generation))
	return suffix(h%suffixSpace) + suffix(h/suffixSpace%suffixSpace)
}

// alphabet is utilrand.String's: what Kubernetes name suffixes are made of.
const (
	alphabet    = "bcdfghjklmnpqrstvwxz2456789"
	suffixSpace = 27 * 27 * 27 * 27 * 27
)

// suffix is a Kubernetes-style random-looking name suffix of five
// characters, distinct for distinct n below suffixSpace (a bijection: n is
// scrambled by a multiplier prime to 27).
func suffix(n uint64) string {
	h := (n*7_368_787 + 1_234_567) % suffixSpace
	var b [5]byte
	for i := range b {
		b[i] = alphabet[h%27]
		h /= 27
	}
	return string(b[:])
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
