package allocation

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// BenchmarkAssign is the first assignment of T targets to N collectors, in
// the order the allocator sees them: collectors first, then the first
// discovery update with every job.
func BenchmarkAssign(b *testing.B) {
	for _, tc := range []struct{ targets, n, jobs int }{{10000, 100, 100}, {100000, 100, 100}, {100000, 100, 1}} {
		targets := makeTargets(tc.targets, tc.jobs, "b")
		collectors := makeCollectors(tc.n)
		name := "targets=" + strconv.Itoa(tc.targets) + "/n=" + strconv.Itoa(tc.n)
		if tc.jobs == 1 {
			name += "/one-job"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var a *Allocator
			for b.Loop() {
				a = mustNew(b, Options{})
				a.SetCollectors(collectors)
				a.SetJobTargets(targets)
			}
			b.ReportMetric(a.Snapshot().Balance(), "max/mean")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tc.targets), "ns/target")
		})
	}
}

// BenchmarkJoin is one collector joining N, and leaving again, at T targets,
// for consistent-hashing (the default) and ordinal (prefix "ordinal/"), and
// what replacing 1% of the targets then moves beyond the replaced ones.
func BenchmarkJoin(b *testing.B) {
	for _, strategy := range []string{ConsistentHashing, Ordinal} {
		prefix := ""
		if strategy != ConsistentHashing {
			prefix = strategy + "/"
		}
		for _, targets := range []int{10000, 100000} {
			for _, n := range []int{3, 10, 30, 100} {
				b.Run(prefix+"targets="+strconv.Itoa(targets)+"/n="+strconv.Itoa(n), func(b *testing.B) {
					benchJoin(b, strategy, targets, n)
				})
			}
		}
	}
}

func benchJoin(b *testing.B, strategy string, targets, n int) {
	a := mustNew(b, Options{Strategy: strategy})
	jobs := makeTargets(targets, 100, "j")
	a.SetJobTargets(jobs)
	small, large := makeCollectors(n), makeCollectors(n+1)
	a.SetCollectors(small)
	balance := a.Snapshot().Balance()
	var join, leave Result
	b.ReportAllocs()
	for b.Loop() {
		join = a.SetCollectors(large)
		leave = a.SetCollectors(small)
	}
	b.ReportMetric(balance, "max/mean")
	b.ReportMetric(float64(join.Moved)/float64(join.Min), "moved/optimal")
	b.ReportMetric(float64(leave.Moved)/float64(leave.Min), "leave-moved/optimal")
	b.ReportMetric(float64(join.Duration.Nanoseconds())/1e6, "join-ms")

	// 1% churn: in every job, every 100th target replaced by a new one.
	fresh := makeTargets(targets, 100, "churn")
	changed := 0
	for job, ts := range jobs {
		ts = slices.Clone(ts)
		for k := 0; k < len(ts); k += 100 {
			ts[k] = fresh[job][k]
			changed++
		}
		jobs[job] = ts
	}
	churn := a.SetJobTargets(jobs)
	b.ReportMetric(float64(churn.Moved)/float64(changed), "churn-moved/changed")
}

// BenchmarkMemory reports the allocator's own bytes per target: everything
// retained beyond the Target values and their labels.
func BenchmarkMemory(b *testing.B) {
	const targets = 100000
	ts := makeTargets(targets, 100, "mem")
	collectors := makeCollectors(100)
	var perTarget float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		a := mustNew(b, Options{})
		a.SetJobTargets(ts)
		a.SetCollectors(collectors)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perTarget = float64(after.HeapAlloc-before.HeapAlloc) / targets
		runtime.KeepAlive(a)
	}
	b.ReportMetric(perTarget, "B/target")
}

// BenchmarkSliceRead is the read path of the HTTP API: one (collector, job).
func BenchmarkSliceRead(b *testing.B) {
	a := mustNew(b, Options{})
	a.SetJobTargets(makeTargets(100000, 100, "r"))
	a.SetCollectors(makeCollectors(10))
	s := a.Snapshot()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += len(s.Slice("collector-7", "job-42").Targets)
	}
	if n == 0 {
		b.Fatal("empty slice")
	}
}

// BenchmarkUpdateOneJob replaces 10% of one 1,000-target job at 100k targets
// over 100 jobs and 100 collectors: the cost of a routine discovery update.
func BenchmarkUpdateOneJob(b *testing.B) {
	all := makeTargets(100000, 100, "u")
	a := mustNew(b, Options{})
	a.SetCollectors(makeCollectors(100))
	a.SetJobTargets(all)
	job := all["job-7"]
	variants := [2][]*Target{job, append(slices.Clone(job[:len(job)-100]), makeTargets(100, 1, "fresh")["job-0"]...)}
	for _, t := range variants[1][len(job)-100:] {
		t.Job = "job-7"
	}
	b.ReportAllocs()
	i := 0
	var res Result
	for b.Loop() {
		i++
		res = a.SetJobTargets(map[string][]*Target{"job-7": variants[i%2]})
	}
	b.ReportMetric(float64(res.Moved), "moved")
}
