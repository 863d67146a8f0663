package relabel

import (
	"cmp"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"
	promrelabel "github.com/prometheus/prometheus/model/relabel"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/parallel"
)

// prometheus-operator's sharding rule: the label it hashes into and the
// placeholder the collector replaces with its shard.
const (
	shardHashLabel   = "__tmp_hash"
	shardPlaceholder = "$(SHARD)"
)

// Filter turns each job's target groups into targets: it applies the job's
// relabel_configs (strategy allocatorconfig.FilterRelabelConfig) to the group labels merged
// with the target labels, without copying them, and computes the target
// identity. It remembers the previous pass per job, so a job whose groups did
// not change costs nothing and a target whose discovered labels did not
// change is reused as is.
//
// A Filter is not safe for concurrent use; it parallelises internally, across
// jobs and across pieces of a large job.
type Filter struct {
	relabel bool
	jobs    map[string]*filterJob // guarded by the single owner
	pool    sync.Pool             // *worker
}

// filterJob is the state of one job across passes.
type filterJob struct {
	cfg    *promconfig.ScrapeConfig
	rules  []rule         // relabel_configs with the sharding rule removed
	seeds  []labels.Label // scrape-config labels set where absent
	groups map[*targetgroup.Group]struct{}
	byAddr map[string]*allocation.Target // previous targets by discovered address
	out    []*allocation.Target          // previous result, sorted by Hash
	dirty  bool                          // config changed since the last pass
}

// NewFilter returns a Filter for the strategy allocatorconfig.FilterRelabelConfig (also when
// empty) or allocatorconfig.FilterNone.
func NewFilter(strategy string) *Filter {
	f := &Filter{relabel: strategy != allocatorconfig.FilterNone, jobs: map[string]*filterJob{}}
	f.pool.New = func() any { return &worker{} }
	return f
}

// ApplyConfig sets the jobs. A job whose scrape config changed is recomputed
// on the next pass; a removed job is forgotten and reported with no targets by
// the next Process.
func (f *Filter) ApplyConfig(jobs map[string]*promconfig.ScrapeConfig) {
	for name, j := range f.jobs {
		if _, ok := jobs[name]; !ok {
			j.cfg = nil
			j.dirty = true
		}
	}
	for name, sc := range jobs {
		j := f.jobs[name]
		if j != nil && j.cfg != nil && sameScrapeConfig(j.cfg, sc) {
			continue
		}
		if j == nil {
			j = &filterJob{}
			f.jobs[name] = j
		}
		j.cfg = sc
		j.rules = compileRules(neutraliseSharding(sc.RelabelConfigs))
		j.seeds = seeds(sc)
		j.groups = nil
		j.byAddr = nil
		j.dirty = true
	}
}

// Process runs one pass over the groups of every job (as sent by Prometheus'
// discovery manager: all jobs, all groups) and returns the jobs whose target
// set changed: an empty slice means the job now has no targets. Slices are
// sorted by Hash and must not be modified.
func (f *Filter) Process(groups map[string][]*targetgroup.Group) map[string][]*allocation.Target {
	type task struct {
		name string
		job  *filterJob
	}
	var (
		tasks   []task
		changed = map[string][]*allocation.Target{}
	)
	for name, j := range f.jobs {
		if j.cfg == nil {
			delete(f.jobs, name)
			if len(j.out) > 0 || j.dirty {
				changed[name] = []*allocation.Target{}
			}
			continue
		}
		tgs := groups[name]
		if !j.dirty && sameGroups(j.groups, tgs) {
			continue
		}
		tasks = append(tasks, task{name, j})
	}
	if len(tasks) == 0 {
		return changed
	}

	// Cut every job into pieces of about pieceTargets targets and relabel
	// the pieces in parallel, so that one large job (kubernetes-pods across
	// a cluster, a file_sd file of thousands of targets) uses every core too;
	// then put each job's pieces together.
	var pieces []piece
	for i, t := range tasks {
		p := piece{task: i}
		n := 0
		for _, tg := range groups[t.name] {
			for lo := 0; lo < len(tg.Targets); {
				hi := min(len(tg.Targets), lo+pieceTargets-n)
				p.segments = append(p.segments, segment{tg, lo, hi})
				n += hi - lo
				lo = hi
				if n == pieceTargets {
					pieces = append(pieces, p)
					p, n = piece{task: i}, 0
				}
			}
		}
		if n > 0 {
			pieces = append(pieces, p)
		}
	}
	f.parallel(len(pieces), func(w *worker, i int) {
		p := &pieces[i]
		t := tasks[p.task]
		p.targets = w.piece(t.name, t.job, p.segments, f.relabel)
	})
	byTask := make([][]piece, len(tasks))
	for _, p := range pieces {
		byTask[p.task] = append(byTask[p.task], p)
	}
	results := make([][]*allocation.Target, len(tasks))
	same := make([]bool, len(tasks))
	f.parallel(len(tasks), func(w *worker, i int) {
		results[i], same[i] = w.merge(tasks[i].job, groups[tasks[i].name], byTask[i])
	})
	for i, t := range tasks {
		if !same[i] || t.job.dirty {
			changed[t.name] = results[i]
		}
		t.job.dirty = false
	}
	return changed
}

// pieceTargets is about how many targets a piece of a job holds.
const pieceTargets = 4096

// piece is a run of one job's targets relabeled by one worker.
type piece struct {
	task     int
	segments []segment
	targets  []built // the kept targets, in order
}

// segment is the targets [lo, hi) of a group.
type segment struct {
	tg     *targetgroup.Group
	lo, hi int
}

// built is a target the filter kept, and whether it was reused from the
// previous pass.
type built struct {
	t      *allocation.Target
	reused bool
}

// parallel calls fn(w, i) for every i in [0, n) on every core, each
// goroutine with a worker of its own.
func (f *Filter) parallel(n int, fn func(w *worker, i int)) {
	ws := make([]*worker, parallel.Workers(n))
	for g := range ws {
		ws[g] = f.pool.Get().(*worker)
	}
	parallel.Each(n, func(g, i int) { fn(ws[g], i) })
	for _, w := range ws {
		f.pool.Put(w)
	}
}

// Targets returns the current targets of a job, sorted by Hash.
func (f *Filter) Targets(job string) []*allocation.Target {
	if j := f.jobs[job]; j != nil {
		return j.out
	}
	return nil
}

// worker holds the scratch space of one goroutine.
type worker struct {
	keys []string // own label names of the previous target, sorted; shared by targets, never modified
	r    relabeler
	tmp  []labels.Label
	seen map[uint64]int
	old  []bool // per output index: the target was served by the previous pass
}

// piece relabels a run of a job's targets and returns those kept. It only
// reads the job's state, so pieces of one job run in parallel.
func (w *worker) piece(name string, j *filterJob, segs []segment, filter bool) []built {
	n := 0
	for _, sg := range segs {
		n += sg.hi - sg.lo
	}
	out := make([]built, 0, n)
	for _, sg := range segs {
		tg := sg.tg
		// The group's labels, sorted: shared by every target of the group
		// (in this piece) that is kept, so never reused.
		gl := sortedLabels(nil, tg.Labels)
		for _, tl := range tg.Targets[sg.lo:sg.hi] {
			if t, reused := w.target(name, j, tl, gl, filter); t != nil {
				out = append(out, built{t, reused})
			}
		}
	}
	return out
}

// merge puts a job's pieces together: one target per identity, sorted by
// Hash, and the state for the next pass. It reports whether the result
// equals the previous one.
func (w *worker) merge(j *filterJob, tgs []*targetgroup.Group, pieces []piece) ([]*allocation.Target, bool) {
	n := 0
	for _, p := range pieces {
		n += len(p.targets)
	}
	groupSet := make(map[*targetgroup.Group]struct{}, len(tgs))
	for _, tg := range tgs {
		groupSet[tg] = struct{}{}
	}
	byAddr := make(map[string]*allocation.Target, n)
	out := make([]*allocation.Target, 0, n)
	clear(w.seen)
	if w.seen == nil {
		w.seen = make(map[uint64]int, n)
	}
	w.old = w.old[:0]
	for _, p := range pieces {
		for _, b := range p.targets {
			t := b.t
			byAddr[t.Address] = t
			if i, dup := w.seen[t.Hash]; dup {
				// Same identity: one target. Serve the newest labels: the ones
				// not served before, else a stable choice.
				if preferTarget(t, b.reused, out[i], w.old[i]) {
					out[i], w.old[i] = t, b.reused
				}
				continue
			}
			w.seen[t.Hash] = len(out)
			out = append(out, t)
			w.old = append(w.old, b.reused)
		}
	}
	slices.SortFunc(out, func(a, b *allocation.Target) int { return cmp.Compare(a.Hash, b.Hash) })
	same := slices.Equal(out, j.out)
	if same && j.out != nil {
		out = j.out
	}
	j.groups, j.byAddr, j.out = groupSet, byAddr, out
	return out, same
}

// target builds one target; nil means dropped. It also reports whether the
// target was reused from the previous pass. gl are the group's labels, sorted.
func (w *worker) target(job string, j *filterJob, tLabels model.LabelSet, gl []labels.Label, filter bool) (*allocation.Target, bool) {
	disc := allocation.Discovered{Group: gl, Own: tLabels}
	addr := disc.Get(model.AddressLabel)
	if prev := j.byAddr[addr]; prev != nil && prev.Labels.Same(disc) {
		return prev, true
	}
	disc.OwnNames = w.ownNames(tLabels)
	r := &w.r
	r.reset(disc)
	for _, s := range j.seeds {
		if r.Get(s.Name) == "" {
			r.Set(s.Name, s.Value)
		}
	}
	if filter && !r.apply(j.rules) {
		return nil, false
	}
	if r.Get(model.AddressLabel) == "" {
		return nil, false
	}
	// Identity: the job and the relabeled labels without __meta_*.
	w.tmp = r.identityLabels(w.tmp[:0])
	t := &allocation.Target{
		Job:     job,
		Hash:    identity(job, w.tmp),
		Address: addr,
		Labels:  disc,
		Node:    nodeOf(disc),
		Weight:  parseWeight(r.Get(allocation.WeightLabel)),
	}
	// The instance label Prometheus gives the target: the one relabeling
	// set, else the relabeled address.
	t.SetInstance(cmp.Or(r.Get(model.InstanceLabel), r.Get(model.AddressLabel)))
	return t, false
}

// parseWeight reads a __shardwise_weight value: a positive number (a
// fraction is rounded; the largest is 2³²-1). Anything else, or none, is 0,
// which counts as 1.
func parseWeight(v string) uint32 {
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 0) {
		return 0
	}
	return uint32(min(math.Round(f), math.MaxUint32))
}

// ownNames returns a target's own label names, sorted. Targets of one group
// usually share their label names, so the names of the previous target are
// tried first: one map lookup per label instead of a sort.
func (w *worker) ownNames(ls model.LabelSet) []string {
	if len(ls) == len(w.keys) {
		same := true
		for _, k := range w.keys {
			if _, ok := ls[model.LabelName(k)]; !ok {
				same = false
				break
			}
		}
		if same {
			return w.keys
		}
	}
	// A new slice, never a reused one: targets share it as their OwnNames.
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	w.keys = keys
	return keys
}

func sortedLabels(dst []labels.Label, ls model.LabelSet) []labels.Label {
	for ln, lv := range ls {
		dst = append(dst, labels.Label{Name: string(ln), Value: string(lv)})
	}
	slices.SortFunc(dst, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	return dst
}

// identity hashes the job and sorted labels.
func identity(job string, ls []labels.Label) uint64 {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(job)
	_, _ = d.Write(sep)
	for _, l := range ls {
		_, _ = d.WriteString(l.Name)
		_, _ = d.Write(sep)
		_, _ = d.WriteString(l.Value)
		_, _ = d.Write(sep)
	}
	return d.Sum64()
}

var sep = []byte{0xff}

// preferTarget reports whether candidate should replace current for one
// identity: a candidate whose labels are new (not served before) wins over
// one served before; otherwise the larger label set wins, for determinism.
func preferTarget(candidate *allocation.Target, candOld bool, current *allocation.Target, curOld bool) bool {
	if candOld != curOld {
		return curOld
	}
	return candidate.Labels.Compare(current.Labels) > 0
}

// neutraliseSharding removes prometheus-operator's sharding rules (the
// __tmp_hash hashmod and the keep on $(SHARD)), so every target is seen: the
// collector substitutes $(SHARD) itself in the configs it is served.
func neutraliseSharding(rcs []*promrelabel.Config) []*promrelabel.Config {
	out := make([]*promrelabel.Config, 0, len(rcs))
	for _, rc := range rcs {
		if rc.TargetLabel == shardHashLabel {
			continue
		}
		if rc.Regex.Regexp != nil && strings.Contains(rc.Regex.String(), shardPlaceholder) {
			continue
		}
		out = append(out, rc)
	}
	return out
}

// seeds are the labels Prometheus sets from the scrape config before
// relabeling where the target does not carry them (scrape.PopulateDiscoveredLabels).
func seeds(sc *promconfig.ScrapeConfig) []labels.Label {
	s := []labels.Label{
		{Name: model.JobLabel, Value: sc.JobName},
		{Name: model.ScrapeIntervalLabel, Value: sc.ScrapeInterval.String()},
		{Name: model.ScrapeTimeoutLabel, Value: sc.ScrapeTimeout.String()},
		{Name: model.MetricsPathLabel, Value: sc.MetricsPath},
		{Name: model.SchemeLabel, Value: sc.Scheme},
	}
	keys := make([]string, 0, len(sc.Params))
	for k, v := range sc.Params {
		if len(v) > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		s = append(s, labels.Label{Name: model.ParamLabelPrefix + k, Value: sc.Params[k][0]})
	}
	return s
}

// sameGroups reports whether tgs is exactly the set of groups seen before.
// Discoverers send a new Group for every change, so pointer identity is a
// safe and cheap test.
func sameGroups(prev map[*targetgroup.Group]struct{}, tgs []*targetgroup.Group) bool {
	if prev == nil || len(prev) != len(tgs) {
		return false
	}
	for _, tg := range tgs {
		if _, ok := prev[tg]; !ok {
			return false
		}
	}
	return true
}

// sameScrapeConfig compares two scrape configs, secrets included (their YAML
// form would hide them).
func sameScrapeConfig(a, b *promconfig.ScrapeConfig) bool {
	return a == b || reflect.DeepEqual(a, b)
}
