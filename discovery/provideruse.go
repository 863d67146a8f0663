package discovery

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	promdiscovery "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/kubernetes"
	promrelabel "github.com/prometheus/prometheus/model/relabel"

	"github.com/shardwise/shardwise/discovery/relabel"
)

// Prometheus' manager runs one provider for equal service discovery configs
// (trackedConfig): the labels a provider keeps are the union of what the
// jobs sharing it read (relabel.ReadLabels).

// providerUse is the labels the provider of one service discovery config
// (at index idx of its jobs' configs) keeps.
type providerUse struct {
	cfg promdiscovery.Config
	idx int
	use relabel.LabelUse
}

// providerUses holds one providerUse per provider, found the way Prometheus'
// manager shares providers (reflect.DeepEqual of the configs), bucketed by a
// cheap key so that a lookup compares few configs.
type providerUses map[string][]*providerUse

func bucketKey(idx int, cfg promdiscovery.Config) string {
	k := strconv.Itoa(idx) + " " + fmt.Sprintf("%T", cfg)
	if kc, ok := cfg.(*kubernetes.SDConfig); ok {
		k += " " + string(kc.Role) + " " + strings.Join(kc.NamespaceDiscovery.Names, ",")
	}
	return k
}

func (p providerUses) find(idx int, cfg promdiscovery.Config) *providerUse {
	for _, u := range p[bucketKey(idx, cfg)] {
		if u.idx == idx && reflect.DeepEqual(u.cfg, cfg) {
			return u
		}
	}
	return nil
}

// labelUses returns, for every job and index of its service discovery
// configs, the labels the provider must keep: the union over the jobs that
// share it, and over prev (what the provider kept so far: a running
// provider's set only grows while it runs, so removing a job never restarts
// it). It also returns the sets by provider, to pass as prev next time.
func labelUses(jobs map[string][]*promrelabel.Config, cfgs map[string]promdiscovery.Configs, prev providerUses) (map[string][]relabel.LabelUse, providerUses) {
	cur := providerUses{}
	found := make(map[string][]*providerUse, len(cfgs))
	for job, cs := range cfgs {
		read := relabel.ReadLabels(jobs[job])
		ps := make([]*providerUse, len(cs))
		for i, c := range cs {
			u := cur.find(i, c)
			if u == nil {
				u = &providerUse{cfg: c, idx: i}
				if old := prev.find(i, c); old != nil {
					u.use = old.use
				}
				k := bucketKey(i, c)
				cur[k] = append(cur[k], u)
			}
			u.use = u.use.Union(read)
			ps[i] = u
		}
		found[job] = ps
	}
	out := make(map[string][]relabel.LabelUse, len(cfgs))
	for job, ps := range found {
		us := make([]relabel.LabelUse, len(ps))
		for i, u := range ps {
			us[i] = u.use
		}
		out[job] = us
	}
	return out, cur
}
