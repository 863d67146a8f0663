package discovery

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/common/model"
	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/shardwise/shardwise/discovery/relabel"
)

// A job is served only once every provider (one per service discovery
// config) of it has delivered its initial target set: Prometheus' discovery
// manager sends an empty list for a provider that has not reported yet, which
// must not reach collectors as "no targets".
//
// Each provider is wrapped so that, once it has delivered, it adds a
// synthetic group (syncedPrefix + its index in the job's configs) with one
// placeholder target to its own groups. The synthetic group travels inside
// Prometheus' snapshots with the provider's other groups, so a snapshot that
// holds it also holds everything the provider sent before: no race between
// "delivered" and "data". The Manager strips it before the filter.
//
// Delivered means: the first update for providers that send their whole set
// at once (static, http, dns and every refresh-based mechanism); the
// initial-sync marker for Kubernetes and file discovery, which send one group
// per object or file (our patched copy of Prometheus sends the marker, see
// third_party/prometheus.sh).
const (
	syncedPrefix = "shardwise/provider-synced/"
	syncedLabel  = model.LabelName("__shardwise_provider_synced__")
)

// trackedConfig wraps one service discovery config of a job. It is compared
// with reflect.DeepEqual by Prometheus' manager, which runs one provider for
// equal configs and keeps unchanged providers running: the job is not part
// of it, so jobs with the same config at the same index share a provider
// and its informers (100 ServiceMonitors of one namespace watch its pods,
// Services and EndpointSlices once, not 100 times); failed is shared.
//
// use is the __meta_* labels the provider keeps (provideruse.go): those the
// jobs sharing it read. It is part of the identity, so a change of it
// restarts the provider; Manager.apply only ever grows it while the config
// is in use.
type trackedConfig struct {
	promdiscovery.Config
	idx    int
	use    relabel.LabelUse
	failed *failedProviders
}

// NewDiscoverer implements promdiscovery.Config.
func (c trackedConfig) NewDiscoverer(o promdiscovery.DiscovererOptions) (promdiscovery.Discoverer, error) {
	d, err := c.Config.NewDiscoverer(o)
	if err != nil {
		// No provider will run: the job must not wait for it.
		c.failed.set(c.Config, c.idx, true)
		return nil, err
	}
	c.failed.set(c.Config, c.idx, false)
	_, k8s := c.Config.(*kubernetes.SDConfig)
	_, f := c.Config.(*file.SDConfig)
	return &trackedDiscoverer{inner: d, idx: c.idx, marker: k8s || f, trim: relabel.NewTrimmer(c.use)}, nil
}

// trackConfigs wraps a job's service discovery configs; uses[i] is the
// labels the provider of cfgs[i] keeps (labelUses).
func trackConfigs(cfgs promdiscovery.Configs, uses []relabel.LabelUse, failed *failedProviders) promdiscovery.Configs {
	out := make(promdiscovery.Configs, len(cfgs))
	for i, c := range cfgs {
		out[i] = trackedConfig{Config: c, idx: i, use: uses[i], failed: failed}
	}
	return out
}

// failedProviders records the service discovery configs (with their index
// in a job's configs) whose discoverer could not be created. Failures are
// rare, so a list compared with reflect.DeepEqual, as Prometheus' manager
// compares configs, is enough.
type failedProviders struct {
	mu   sync.Mutex // guards list
	list []failedConfig
}

type failedConfig struct {
	cfg promdiscovery.Config
	idx int
}

func (f *failedProviders) set(cfg promdiscovery.Config, idx int, failed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.list, func(e failedConfig) bool { return e.idx == idx && reflect.DeepEqual(e.cfg, cfg) })
	switch {
	case failed && i < 0:
		f.list = append(f.list, failedConfig{cfg, idx})
	case !failed && i >= 0:
		f.list = slices.Delete(f.list, i, i+1)
	}
}

func (f *failedProviders) has(cfg promdiscovery.Config, idx int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.list, func(e failedConfig) bool { return e.idx == idx && reflect.DeepEqual(e.cfg, cfg) })
}

// trackedDiscoverer forwards a discoverer's updates and adds the synthetic
// group to the first update after the provider delivered.
type trackedDiscoverer struct {
	inner  promdiscovery.Discoverer
	idx    int
	marker bool             // wait for targetgroup.SyncedSource rather than the first update
	trim   *relabel.Trimmer // nil keeps every label
}

// Run implements promdiscovery.Discoverer.
func (d *trackedDiscoverer) Run(ctx context.Context, up chan<- []*targetgroup.Group) {
	in := make(chan []*targetgroup.Group)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.inner.Run(ctx, in)
	}()
	defer func() {
		// The inner discoverer returns on ctx; let a pending send through.
		for {
			select {
			case <-done:
				return
			case <-in:
			}
		}
	}()
	delivered := false
	for {
		select {
		case <-ctx.Done():
			return
		case tgs, ok := <-in:
			if !ok { // StaticProvider closes its channel
				in = nil
				continue
			}
			isMarker := targetgroup.IsSyncedMarker(tgs)
			if !isMarker {
				tgs = d.trim.Groups(tgs)
			}
			if !delivered && (!d.marker || isMarker) {
				delivered = true
				tgs = append(tgs, &targetgroup.Group{
					Source:  syncedPrefix + strconv.Itoa(d.idx),
					Targets: []model.LabelSet{{syncedLabel: "1"}},
				})
			} else if isMarker {
				continue
			}
			select {
			case up <- tgs:
			case <-ctx.Done():
				return
			}
		}
	}
}

// splitSynced returns a job's groups without the synthetic groups, and the
// indexes of the providers that delivered.
func splitSynced(tgs []*targetgroup.Group) ([]*targetgroup.Group, map[int]bool) {
	var synced map[int]bool
	out := tgs
	for i, tg := range tgs {
		if tg == nil || !strings.HasPrefix(tg.Source, syncedPrefix) {
			if synced != nil {
				out = append(out, tg)
			}
			continue
		}
		if synced == nil {
			synced = map[int]bool{}
			out = append(make([]*targetgroup.Group, 0, len(tgs)-1), tgs[:i]...)
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(tg.Source, syncedPrefix)); err == nil {
			synced[n] = true
		}
	}
	return out, synced
}
