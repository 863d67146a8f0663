package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardwise/shardwise/benchmarks/internal/strategy"
	"github.com/shardwise/shardwise/discovery/collector"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// Row is one line of the stability table, with the exact field names other
// tools read (the allocation issue's stability command).
//
// For N collectors and T targets, starting from nothing: the first
// assignment (assign_ms; balance), one collector joins (N→N+1: join_ms,
// moved_join, min_join, balance_after_join), the joiner leaves again
// (N+1→N: moved_leave, min_leave), 1% of the targets are replaced by new ones
// (moved_churn, churn_min), then a StatefulSet rolling restart: every
// collector pod in turn is terminating, deleted, recreated Pending under the
// same name and ready 10 s later, the collector set following the
// collector watcher's membership rule (collector.Membership). restart_moved
// counts every move of every intermediate step without a grace period (the
// pod leaves and comes back); restart_moved_grace the same with the default
// 30 s grace period, within which the pod never leaves. The minima are
// Step.Min.
type Row struct {
	N                 int     `json:"n"`
	Targets           int     `json:"targets"`
	Balance           float64 `json:"balance"`
	BalanceAfterJoin  float64 `json:"balance_after_join"`
	MovedJoin         int     `json:"moved_join"`
	MinJoin           int     `json:"min_join"`
	MovedLeave        int     `json:"moved_leave"`
	MinLeave          int     `json:"min_leave"`
	MovedChurn        int     `json:"moved_churn"`
	ChurnMin          int     `json:"churn_min"`
	RestartMoved      int     `json:"restart_moved"`
	RestartMovedGrace int     `json:"restart_moved_grace"`
	AssignMS          float64 `json:"assign_ms"`
	JoinMS            float64 `json:"join_ms"`
}

// Measurement is a Row with the detail behind it.
type Measurement struct {
	Strategy string `json:"strategy"`
	Row
	// Steps are assign, join, leave and churn.
	Steps []Step `json:"steps"`
	// Collectors are the names after the join, the joiner first;
	// LoadsBefore (0 for the joiner) and LoadsAfter are in that order.
	Collectors  []string `json:"collectors"`
	LoadsBefore []int    `json:"loads_before_join"`
	LoadsAfter  []int    `json:"loads_after_join"`
}

// Config sizes a measurement or scenario.
type Config struct {
	// Targets is the number of targets at the start.
	Targets int
	// Jobs is the number of jobs they are spread over.
	Jobs int
	// Seed seeds the workload and the trace.
	Seed uint64
	// Epsilon is the reference load bound of Step.Min.
	Epsilon float64
	// Collectors is the collector count the restart, churn, job and trace
	// scenarios start from.
	Collectors int
	// TraceSteps is the length of the random trace.
	TraceSteps int
	// SkipRestart leaves restart_moved at 0 and skips the rolling restart
	// (2N full updates) when only the other figures are wanted.
	SkipRestart bool
}

// Names returns the names of n collectors, "collector-0"..., as a
// StatefulSet names its pods.
func Names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "collector-" + strconv.Itoa(i)
	}
	return out
}

// Measure takes one Row for a fresh strategy from f with n collectors.
func Measure(f strategy.Factory, cfg Config, n int) (Measurement, error) {
	s, err := f.New()
	if err != nil {
		return Measurement{}, err
	}
	if n < 1 {
		return Measurement{}, fmt.Errorf("measure: need at least one collector, got %d", n)
	}
	w := NewWorkload(cfg.Targets, cfg.Jobs, cfg.Seed)
	r := NewRunner(s, cfg.Epsilon)
	names := Names(n)
	joined := Names(n + 1)

	// The joiner comes first in Collectors and both load lists.
	m := Measurement{Strategy: s.Name(), Collectors: append([]string{joined[n]}, names...)}
	assign := r.Apply(Change{Kind: "assign", Collectors: names, Jobs: w.Jobs()})
	m.LoadsBefore = Loads(r.Owners(), m.Collectors)
	join := r.Apply(Change{Kind: "join", Note: joined[n], Collectors: joined})
	m.LoadsAfter = Loads(r.Owners(), m.Collectors)
	leave := r.Apply(Change{Kind: "leave", Note: joined[n], Collectors: names})
	churn := r.Apply(Change{Kind: "churn", Note: "1%", Jobs: w.Churn(0.01)})
	m.Steps = []Step{assign, join, leave, churn}

	m.Row = Row{
		N:                n,
		Targets:          assign.Targets,
		Balance:          assign.Balance,
		BalanceAfterJoin: join.Balance,
		MovedJoin:        join.Moved,
		MinJoin:          join.Min,
		MovedLeave:       leave.Moved,
		MinLeave:         leave.Min,
		MovedChurn:       churn.Moved,
		ChurnMin:         churn.Min,
		AssignMS:         assign.MS,
		JoinMS:           join.MS,
	}
	if !cfg.SkipRestart {
		r.Sync()
		m.RestartMoved = RollingRestart(r, names, time.Nanosecond)
		m.RestartMovedGrace = RollingRestart(r, names, allocatorconfig.DefaultCollectorNotReadyGracePeriod)
	}
	return m, nil
}

// RollingRestart restarts every collector pod in turn as a StatefulSet
// does (terminating, deleted 2 s later, recreated Pending 2 s after that,
// ready 10 s after that), the collector set following collector.Membership
// with the grace period, and returns the moves summed over every step at
// which the set changed.
func RollingRestart(r *Runner, names []string, grace time.Duration) int {
	m := &collector.Membership{Grace: grace}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string, ready, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now)}}
		status := corev1.ConditionFalse
		p.Status.Phase = corev1.PodPending
		if ready {
			status, p.Status.Phase = corev1.ConditionTrue, corev1.PodRunning
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(now)}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}
		return p
	}
	pods := func(skip string, extra *corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, n := range names {
			if n != skip {
				out = append(out, pod(n, true, false))
			}
		}
		if extra != nil {
			out = append(out, extra)
		}
		return out
	}
	current := slices.Sorted(slices.Values(r.Collectors()))
	moved := 0
	observe := func(ps []*corev1.Pod) {
		set := m.Observe(now, ps)
		cs := make([]string, len(set))
		for i, c := range set {
			cs[i] = c.Name
		}
		if slices.Equal(cs, current) {
			return
		}
		current = cs
		moved += r.Apply(Change{Kind: "restart", Collectors: cs}).Moved
	}
	observe(pods("", nil))
	for _, name := range names {
		observe(pods(name, pod(name, true, true)))
		now = now.Add(2 * time.Second)
		observe(pods(name, nil))
		now = now.Add(2 * time.Second)
		observe(pods(name, pod(name, false, false)))
		now = now.Add(10 * time.Second)
		observe(pods("", nil))
	}
	return moved
}
