package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rollout is a rolling update of one Deployment, as the Deployment and
// EndpointSlice controllers would write it: each step creates a batch of
// new pods (running and ready), replaces the old pods' endpoints with
// theirs in the EndpointSlices, then deletes the old pods.
type Rollout struct {
	Job   string        `json:"job"`
	Pods  int           `json:"pods"`
	Steps []RolloutStep `json:"steps"`
	// MaxVisibleSeconds is the slowest step's VisibleSeconds.
	MaxVisibleSeconds float64 `json:"max_visible_seconds"`
}

// RolloutStep is one step.
type RolloutStep struct {
	Replaced      int `json:"replaced"`
	SlicesWritten int `json:"slices_written"`
	// WriteSeconds is from the first EndpointSlice write to the last's
	// answer; VisibleSeconds from the last's answer to the end of the first
	// poll round (every collector's /jobs/<job>/targets) that served the
	// new set exactly once, which took RoundSeconds.
	WriteSeconds   float64 `json:"write_seconds"`
	VisibleSeconds float64 `json:"visible_seconds"`
	RoundSeconds   float64 `json:"round_seconds"`
	Rounds         int     `json:"rounds"`
}

// stepGap is the pause between steps (a new pod's start-up): longer than
// the discovery manager's coalescing interval, so steps do not merge.
const stepGap = 3 * time.Second

// rollout replaces w's pods in steps and times how long each step takes to
// reach r's collectors.
func rollout(ctx context.Context, c *clients, l *Layout, w *Workload, steps int, r *Result, workers int, logf func(string, ...any)) (*Rollout, error) {
	out := &Rollout{Job: w.Job(), Pods: len(w.Pods)}
	w.Generation++
	per := (len(w.Pods) + steps - 1) / steps
	for s := range steps {
		lo, hi := s*per, min((s+1)*per, len(w.Pods))
		if lo >= hi {
			break
		}
		old := slices.Clone(w.Pods[lo:hi])
		fresh := l.newPods(w, hi-lo)
		if err := parallel(ctx, workers, len(fresh), func(ctx context.Context, i int) error {
			return c.createPod(ctx, w.Pod(fresh[i]), fresh[i].IP, fresh[i].Node)
		}); err != nil {
			return nil, err
		}
		copy(w.Pods[lo:hi], fresh)
		step := RolloutStep{Replaced: hi - lo}
		var first time.Time
		for i, es := range w.EndpointSlices() {
			if (i+1)*EndpointsPerSlice <= lo || i*EndpointsPerSlice >= hi {
				continue
			}
			cur, err := c.kube.DiscoveryV1().EndpointSlices(es.Namespace).Get(ctx, es.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("get endpointslice %s/%s: %w", es.Namespace, es.Name, err)
			}
			cur.Endpoints = es.Endpoints
			if first.IsZero() {
				first = time.Now()
			}
			if _, err := c.kube.DiscoveryV1().EndpointSlices(es.Namespace).Update(ctx, cur, metav1.UpdateOptions{FieldManager: "endpointslice-controller"}); err != nil {
				return nil, fmt.Errorf("update endpointslice %s/%s: %w", es.Namespace, es.Name, err)
			}
			step.SlicesWritten++
		}
		written := time.Now()
		step.WriteSeconds = round(written.Sub(first).Seconds(), 3)
		want := map[string]map[string]bool{w.Job(): w.Targets()}
		r.want[w.Job()] = want[w.Job()]
		for {
			step.Rounds++
			roundStart := time.Now()
			chk, err := r.poll.checkJobs(ctx, want, r.cols)
			if err != nil {
				return nil, fmt.Errorf("rollout step %d: %w", s+1, err)
			}
			if chk.OK() {
				step.VisibleSeconds = round(time.Since(written).Seconds(), 3)
				step.RoundSeconds = round(time.Since(roundStart).Seconds(), 3)
				break
			}
			if time.Since(written) > time.Minute {
				return nil, fmt.Errorf("rollout step %d not visible after a minute: %s", s+1, chk)
			}
			time.Sleep(5 * time.Millisecond)
		}
		logf("rollout step %d: %d pods replaced, %d slices written; visible %.3fs after the last write", s+1, step.Replaced, step.SlicesWritten, step.VisibleSeconds)
		out.Steps = append(out.Steps, step)
		out.MaxVisibleSeconds = max(out.MaxVisibleSeconds, step.VisibleSeconds)
		if err := parallel(ctx, workers, len(old), func(ctx context.Context, i int) error {
			// NotFound: a pod -no-pods never created.
			if err := c.kube.CoreV1().Pods(w.Namespace).Delete(ctx, old[i].Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete pod %s/%s: %w", w.Namespace, old[i].Name, err)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		select {
		case <-time.After(stepGap):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
