package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/shardwise/shardwise/allocation"
)

// Workload is a set of scrape targets spread over jobs, and the changes the
// scenarios make to it. Targets are what discovery would hand the allocator:
// a unique address (10.x.y.z:port), an identity hash of job and address, and
// a few Kubernetes-style discovered labels. Jobs share nothing, so the
// address and the identity are both unique per target.
//
// Every change is copy-on-write: a job's slice is never modified after it has
// been handed out, so strategies may keep it.
type Workload struct {
	jobs map[string][]*allocation.Target
	next int // address counter: every new target gets a fresh address
	rng  *rand.Rand
}

// NewWorkload returns targets spread round-robin over jobs ("job-0"...), with
// a generator for changes seeded by seed.
func NewWorkload(targets, jobs int, seed uint64) *Workload {
	w := &Workload{jobs: map[string][]*allocation.Target{}, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for i := range targets {
		job := "job-" + strconv.Itoa(i%jobs)
		w.jobs[job] = append(w.jobs[job], w.newTarget(job))
	}
	return w
}

func (w *Workload) newTarget(job string) *allocation.Target {
	i := w.next
	w.next++
	addr := fmt.Sprintf("10.%d.%d.%d:%d", i>>16&255, i>>8&255, i&255, 8080+i>>24)
	pod := "pod-" + strconv.Itoa(i)
	return &allocation.Target{
		Job:     job,
		Hash:    xxhash.Sum64String(job + "\xff" + addr),
		Address: addr,
		Labels: discovered(
			"__address__", addr,
			"__meta_kubernetes_namespace", "ns-"+strconv.Itoa(i%50),
			"__meta_kubernetes_pod_name", pod,
			"job", job,
		),
	}
}

// Jobs returns every job's targets. Do not modify the slices.
func (w *Workload) Jobs() map[string][]*allocation.Target {
	out := make(map[string][]*allocation.Target, len(w.jobs))
	for k, v := range w.jobs {
		out[k] = v
	}
	return out
}

// Len returns the number of targets.
func (w *Workload) Len() int {
	n := 0
	for _, ts := range w.jobs {
		n += len(ts)
	}
	return n
}

// JobNames returns the job names in sorted order.
func (w *Workload) JobNames() []string {
	names := make([]string, 0, len(w.jobs))
	for k := range w.jobs {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Churn replaces round(frac·T) targets, chosen uniformly, with new targets in
// the same jobs, and returns the changed jobs with their full new target
// lists, ready for SetJobTargets.
func (w *Workload) Churn(frac float64) map[string][]*allocation.Target {
	changed := map[string][]*allocation.Target{}
	for _, p := range w.sample(frac) {
		ts, ok := changed[p.job]
		if !ok {
			ts = slices.Clone(w.jobs[p.job])
			changed[p.job] = ts
		}
		ts[p.i] = w.newTarget(p.job)
	}
	for job, ts := range changed {
		w.jobs[job] = ts
	}
	return changed
}

// position is a target's place: its job and its index in the job's list.
type position struct {
	job string
	i   int
}

// sample draws round(frac·T) targets uniformly without replacement and
// returns their positions in the order drawn.
func (w *Workload) sample(frac float64) []position {
	var all []position
	for _, job := range w.JobNames() {
		for i := range w.jobs[job] {
			all = append(all, position{job, i})
		}
	}
	k := int(frac*float64(len(all)) + 0.5)
	out := make([]position, k)
	for n, j := range w.rng.Perm(len(all))[:k] {
		out[n] = all[j]
	}
	return out
}

// Grow adds round(frac·T) new targets to random existing jobs.
func (w *Workload) Grow(frac float64) map[string][]*allocation.Target {
	names := w.JobNames()
	k := int(frac*float64(w.Len()) + 0.5)
	changed := map[string][]*allocation.Target{}
	for range k {
		job := names[w.rng.IntN(len(names))]
		ts, ok := changed[job]
		if !ok {
			ts = slices.Clone(w.jobs[job])
		}
		changed[job] = append(ts, w.newTarget(job))
	}
	for job, ts := range changed {
		w.jobs[job] = ts
	}
	return changed
}

// Shrink removes round(frac·T) targets chosen uniformly; a job left without
// targets is removed.
func (w *Workload) Shrink(frac float64) map[string][]*allocation.Target {
	drop := map[string]map[int]bool{}
	for _, p := range w.sample(frac) {
		if drop[p.job] == nil {
			drop[p.job] = map[int]bool{}
		}
		drop[p.job][p.i] = true
	}
	changed := map[string][]*allocation.Target{}
	for job, d := range drop {
		var ts []*allocation.Target
		for i, t := range w.jobs[job] {
			if !d[i] {
				ts = append(ts, t)
			}
		}
		changed[job] = ts
		if len(ts) == 0 {
			delete(w.jobs, job)
		} else {
			w.jobs[job] = ts
		}
	}
	return changed
}

// AddJob adds a job with n new targets.
func (w *Workload) AddJob(job string, n int) map[string][]*allocation.Target {
	ts := make([]*allocation.Target, n)
	for i := range ts {
		ts[i] = w.newTarget(job)
	}
	w.jobs[job] = ts
	return map[string][]*allocation.Target{job: ts}
}

// RemoveJob removes a job and returns the change, and the targets it had so
// that the job can be restored with RestoreJob.
func (w *Workload) RemoveJob(job string) (change, had map[string][]*allocation.Target) {
	had = map[string][]*allocation.Target{job: w.jobs[job]}
	delete(w.jobs, job)
	return map[string][]*allocation.Target{job: nil}, had
}

// RestoreJob puts back jobs removed by RemoveJob, same targets.
func (w *Workload) RestoreJob(had map[string][]*allocation.Target) map[string][]*allocation.Target {
	for job, ts := range had {
		w.jobs[job] = ts
	}
	return had
}

// Rand is the workload's generator, for scenarios that draw their own choices.
func (w *Workload) Rand() *rand.Rand { return w.rng }

func discovered(kv ...string) allocation.Discovered {
	return allocation.DiscoveredOf(labels.FromStrings(kv...))
}
