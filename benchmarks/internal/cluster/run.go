package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

// ErrNoControlPlane means KUBEBUILDER_ASSETS is not set.
var ErrNoControlPlane = errors.New("KUBEBUILDER_ASSETS is not set (export KUBEBUILDER_ASSETS=$(./hack/envtest.sh))")

// Options say what to create and measure.
type Options struct {
	// Allocator is the allocator binary (make build).
	Allocator string
	// CRDDir holds the monitoring CRDs (test/crds).
	CRDDir string
	// Dir receives the allocator configs, logs, the audit log and heap
	// profiles; it must exist.
	Dir string

	Targets, Monitors, Collectors, Allocators int
	// RolloutPods is the size of the Deployment whose rolling update is
	// timed, in RolloutSteps steps; no rolling update when RolloutSteps is 0.
	RolloutPods, RolloutSteps int
	// Idle is how long the idle CPU is measured for.
	Idle time.Duration
	// Workers is the number of concurrent creates.
	Workers int
	// Timeout bounds the wait for a complete assignment.
	Timeout time.Duration
	// SampleEvery is the RSS sampling interval.
	SampleEvery time.Duration
	// Poll, when its Interval is set, runs the collectors' polling load
	// against the first allocator.
	Poll PollOptions
	// StartProfile, when positive, is the length of a CPU profile of each
	// allocator taken from the moment it listens (whole seconds, at most 60):
	// <dir>/<allocator>.start-cpu.pb.gz. The idle window begins after it.
	StartProfile time.Duration
	// NoPods creates the EndpointSlices without their pods: endpoints
	// without pod metadata (the rolling update still creates its new pods).
	NoPods bool
	// AllocatorEnv is added to the allocators' environment (KEY=VALUE), for
	// runtime settings such as GOMEMLIMIT or GOGC.
	AllocatorEnv []string

	// Log receives progress lines.
	Log io.Writer
}

// Summary is a run's result.
type Summary struct {
	Targets    int `json:"targets"`
	Monitors   int `json:"monitors"`
	Collectors int `json:"collectors"`
	Allocators int `json:"allocators"`

	Populate PopulateStats `json:"populate"`
	Results  []*Result     `json:"results"`
	Rollout  *Rollout      `json:"rollout,omitempty"`
	Poll     *PollResult   `json:"poll,omitempty"`

	// NoPods is Options.NoPods; AllocatorEnv is Options.AllocatorEnv.
	NoPods       bool     `json:"no_pods,omitempty"`
	AllocatorEnv []string `json:"allocator_env,omitempty"`
	GoVersion    string   `json:"go_version"`
	CPUs         int      `json:"cpus"`
	// LoadAverage is /proc/loadavg's 1-minute figure when the allocators
	// started and when the run ended: other work on the machine.
	LoadAverage [2]float64 `json:"load_average"`
}

// Result is one allocator's figures.
type Result struct {
	Name       string `json:"name"`
	Jobs       int    `json:"jobs"`
	Collectors int    `json:"collectors"`
	// Targets are the kept targets; Discovered is twice that (every
	// endpoint has an http and a metrics port, relabeling keeps metrics).
	Targets    int `json:"targets"`
	Discovered int `json:"discovered_targets"`

	// ListeningSeconds is from start to the HTTP port's log line;
	// CompleteSeconds to the end of the first poll round (GET /jobs and
	// /jobs/<job>/targets?collector_id= for every job and collector) in
	// which every kept target was served exactly once; the round took
	// CompleteRoundSeconds.
	ListeningSeconds     float64 `json:"listening_seconds"`
	CompleteSeconds      float64 `json:"complete_seconds"`
	CompleteRoundSeconds float64 `json:"complete_round_seconds"`
	Rounds               int     `json:"rounds"`

	// RSSSteadyMiB is VmRSS at the end of the idle window, RSSPeakMiB
	// VmHWM at the end of the run, RSSPeakStartMiB VmHWM once complete.
	RSSSteadyMiB    float64 `json:"rss_steady_mib"`
	RSSPeakStartMiB float64 `json:"rss_peak_start_mib"`
	RSSPeakMiB      float64 `json:"rss_peak_mib"`

	IdleSeconds    float64 `json:"idle_seconds"`
	IdleCPUSeconds float64 `json:"idle_cpu_seconds"`
	// IdleCores is IdleCPUSeconds per second: CPU seconds per minute / 60.
	IdleCores float64 `json:"idle_cores"`

	API  *APIRequests `json:"api_requests"`
	Heap Heap         `json:"heap"`
	// HeapPerTargetKiB is the live heap beyond the informer caches per kept
	// target; RSSPerTargetKiB is steady RSS beyond them per kept target.
	HeapPerTargetKiB float64 `json:"heap_per_target_over_informers_kib"`
	RSSPerTargetKiB  float64 `json:"rss_per_target_over_informers_kib"`

	// ExactlyOnce is the last check, after everything else: every kept
	// target served to exactly one collector.
	ExactlyOnce bool     `json:"exactly_once"`
	ExitCode    int      `json:"exit_code"`
	RSS         []Sample `json:"rss_series"`

	user         string
	logFile      *os.File
	proc         *process
	poll         *poller
	want         map[string]map[string]bool
	cols         []string
	startProfile chan error // the start-up CPU profile's outcome, nil when none was taken
}

// Run starts a control plane, creates the cluster, runs the allocators and
// measures them.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, ErrNoControlPlane
	}
	logf := progress(o.Log)
	layout, err := NewLayout(o.Targets, o.Monitors, o.Collectors, o.Allocators, max(o.RolloutPods, 1))
	if err != nil {
		return nil, err
	}
	users := make([]string, len(layout.Allocators))
	for i, a := range layout.Allocators {
		users[i] = "shardwise-allocator-" + a.Name
	}
	auditLog := filepath.Join(o.Dir, "audit.log")
	env, cfg, err := startControlPlane(o, users, auditLog, logf)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			logf("stop envtest: %v", err)
		}
	}()
	c, err := newClients(cfg)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Targets: o.Targets, Monitors: o.Monitors, Collectors: o.Collectors, Allocators: o.Allocators,
		NoPods: o.NoPods, AllocatorEnv: o.AllocatorEnv, GoVersion: runtime.Version(), CPUs: runtime.NumCPU()}
	if sum.Populate, err = c.populate(ctx, layout, o.Workers, !o.NoPods, logf); err != nil {
		return nil, err
	}
	logf("created %d pods, %d services, %d endpointslices, %d servicemonitors in %.1fs (%.0f writes/s)",
		sum.Populate.Pods, sum.Populate.Services, sum.Populate.EndpointSlices, sum.Populate.Monitors, sum.Populate.Seconds, sum.Populate.WritesPerSecond)

	for i, a := range layout.Allocators {
		r, err := prepare(ctx, env, cfg, c, a, users[i], o.Dir)
		if err != nil {
			return nil, err
		}
		sum.Results = append(sum.Results, r)
	}
	sum.LoadAverage[0] = loadAverage()
	defer release(sum.Results)
	if err := startAll(ctx, sum.Results, o, logf); err != nil {
		return nil, err
	}
	idle, err := measureIdle(ctx, sum.Results, o, logf)
	if err != nil {
		return nil, err
	}

	first := sum.Results[0]
	if o.Poll.Interval > 0 {
		logf("collectors polling every %s for %s", o.Poll.Interval, o.Poll.Duration)
		if sum.Poll, err = pollLoad(first, o.Poll); err != nil {
			return nil, err
		}
	}
	if o.RolloutSteps > 0 {
		w := layout.Rollout()
		logf("rolling update of %s/%s (%d pods) in %d steps", w.Namespace, w.Name, len(w.Pods), o.RolloutSteps)
		if sum.Rollout, err = rollout(ctx, c, layout, w, o.RolloutSteps, first, o.Workers, logf); err != nil {
			return nil, err
		}
	}

	if err := finish(ctx, sum.Results, logf); err != nil {
		return nil, err
	}
	sum.LoadAverage[1] = loadAverage()
	if err := countAPIRequests(auditLog, idle, sum.Results); err != nil {
		return nil, err
	}
	return sum, nil
}

// progress returns the printf of progress lines to w (nil: none).
func progress(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, "clusterload: "+format+"\n", args...)
		}
	}
}

// startControlPlane writes the audit policy for users into o.Dir and starts
// envtest's etcd and kube-apiserver, with o.CRDDir's CRDs, auditing into
// auditLog.
func startControlPlane(o Options, users []string, auditLog string, logf func(string, ...any)) (*envtest.Environment, *rest.Config, error) {
	policy := filepath.Join(o.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(users)), 0o600); err != nil {
		return nil, nil, fmt.Errorf("write audit policy: %w", err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:        []string{o.CRDDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-mode", "blocking")
	logf("starting kube-apiserver and etcd")
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("start envtest: %w", err)
	}
	return env, cfg, nil
}

// release stops the allocators still running and closes their logs.
func release(results []*Result) {
	for _, r := range results {
		if r.proc != nil {
			r.proc.stop()
		}
		if r.logFile != nil {
			r.logFile.Close()
		}
	}
}

// startAll starts every allocator and waits until each serves every kept
// target exactly once and its start-up CPU profile, if any, is saved.
func startAll(ctx context.Context, results []*Result, o Options, logf func(string, ...any)) error {
	for _, r := range results {
		logf("starting allocator %s: %d jobs, %d kept targets, %d collectors", r.Name, r.Jobs, r.Targets, r.Collectors)
		if err := r.start(o); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range results {
		g.Go(func() error { return r.waitComplete(gctx, o, logf) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, r := range results {
		if r.startProfile != nil {
			if err := <-r.startProfile; err != nil {
				return err
			}
		}
	}
	return nil
}

// measureIdle measures every allocator at once over o.Idle, nothing
// changing in the cluster: CPU, steady RSS and heap, and a CPU profile of
// (most of) the window. It returns each allocator user's idle window.
func measureIdle(ctx context.Context, results []*Result, o Options, logf func(string, ...any)) (map[string][2]time.Time, error) {
	cpu0 := make([]float64, len(results))
	from := time.Now()
	for i, r := range results {
		var err error
		if cpu0[i], err = procfs.CPUSeconds(r.proc.PID()); err != nil {
			return nil, err
		}
	}
	logf("all complete; idle for %s", o.Idle)
	// A CPU profile of (most of) the idle window shows what wakes the
	// allocator when nothing changes: <dir>/<allocator>.idle-cpu.pb.gz.
	var profiles errgroup.Group
	for _, r := range results {
		profiles.Go(func() error { return r.saveIdleProfile(ctx, o.Dir, o.Idle) })
	}
	select {
	case <-time.After(o.Idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	to := time.Now()
	if err := profiles.Wait(); err != nil {
		return nil, err
	}
	idle := map[string][2]time.Time{}
	for i, r := range results {
		idle[r.user] = [2]time.Time{from, to}
		if err := r.recordIdle(ctx, o.Dir, from, to, cpu0[i]); err != nil {
			return nil, err
		}
	}
	return idle, nil
}

// recordIdle records the allocator's figures at the end of the idle window
// from–to: its CPU time since cpu0, its steady RSS, and its heap (kept in
// dir), overall and per kept target.
func (r *Result) recordIdle(ctx context.Context, dir string, from, to time.Time, cpu0 float64) error {
	cpu, err := procfs.CPUSeconds(r.proc.PID())
	if err != nil {
		return err
	}
	st, err := procfs.Status(r.proc.PID())
	if err != nil {
		return err
	}
	r.IdleSeconds = round(to.Sub(from).Seconds(), 1)
	r.IdleCPUSeconds = round(cpu-cpu0, 2)
	r.IdleCores = round(r.IdleCPUSeconds/to.Sub(from).Seconds(), 4)
	r.RSSSteadyMiB = round(mib(st.RSS), 1)
	if r.Heap, err = r.saveHeap(ctx, dir); err != nil {
		return err
	}
	r.HeapPerTargetKiB = round((r.Heap.TotalMiB-r.Heap.InformerMiB)*1024/float64(r.Targets), 2)
	r.RSSPerTargetKiB = round((r.RSSSteadyMiB-r.Heap.InformerMiB)*1024/float64(r.Targets), 2)
	return nil
}

// finish checks, last, that every allocator serves every kept target
// exactly once, records its RSS series and peak, and stops it.
func finish(ctx context.Context, results []*Result, logf func(string, ...any)) error {
	for _, r := range results {
		chk, err := r.poll.check(ctx, r.want, r.cols)
		if err != nil {
			return fmt.Errorf("allocator %s: final check: %w", r.Name, err)
		}
		r.ExactlyOnce = chk.OK()
		if !chk.OK() {
			logf("allocator %s: final check: %s", r.Name, chk)
		}
		st, err := procfs.Status(r.proc.PID())
		if err != nil {
			return err
		}
		r.RSS = r.proc.series()
		r.RSSPeakMiB = peakMiB(mib(st.HWM), r.RSSSteadyMiB, r.RSS)
		r.ExitCode = r.proc.stop()
	}
	return nil
}

// countAPIRequests gives every allocator the API requests its user made,
// from the audit log, split by the idle windows.
func countAPIRequests(auditLog string, idle map[string][2]time.Time, results []*Result) error {
	reqs, err := countRequests(auditLog, idle)
	if err != nil {
		return err
	}
	for _, r := range results {
		r.API = reqs[r.user]
		if r.API == nil {
			r.API = &APIRequests{ByVerb: map[string]int{}}
		}
	}
	return nil
}

// prepare adds the allocator's user with its role and writes its kubeconfig
// and config file.
func prepare(ctx context.Context, env *envtest.Environment, admin *rest.Config, c *clients, a AllocatorLayout, user, dir string) (*Result, error) {
	u, err := env.AddUser(envtest.User{Name: user}, admin)
	if err != nil {
		return nil, fmt.Errorf("add user %s: %w", user, err)
	}
	if err := c.grant(ctx, user); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, a.Name+".kubeconfig")
	if err := writeKubeconfig(u.Config(), kubeconfig); err != nil {
		return nil, err
	}
	r := &Result{Name: a.Name, Jobs: len(a.Workloads), Collectors: len(a.Collectors), user: user, cols: a.Collectors,
		want: map[string]map[string]bool{}}
	for _, w := range a.Workloads {
		r.want[w.Job()] = w.Targets()
		r.Targets += len(w.Pods)
	}
	r.Discovered = 2 * r.Targets
	// The handoff is off: the run's final check is that the assignment
	// serves every target exactly once, and no collector polls to end the
	// overlap a rollout's moves would leave.
	cfg := fmt.Sprintf(`# Generated by benchmarks/internal/cluster.
listen_addr: 127.0.0.1:0
kube_config_file_path: %s
handoff: {enabled: false}
allocation_strategy: consistent-hashing
filter_strategy: relabel-config
enable_pprof: true
collector_namespace: %s
collector_selector:
  matchLabels:
    app.kubernetes.io/component: opentelemetry-collector
    %s: %s
prometheus_cr:
  enabled: true
  scrape_interval: 30s
  service_monitor_selector:
    matchLabels:
      %s: %s
  service_monitor_namespace_selector: {}
`, kubeconfig, a.Namespace, AllocatorLabel, a.Name, AllocatorLabel, a.Name)
	if err := os.WriteFile(filepath.Join(dir, a.Name+".yaml"), []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("write allocator config: %w", err)
	}
	return r, nil
}

func (r *Result) start(o Options) error {
	logFile, err := os.Create(filepath.Join(o.Dir, r.Name+".log"))
	if err != nil {
		return fmt.Errorf("create allocator log: %w", err)
	}
	r.logFile = logFile // closed by Run once the process is gone
	p, err := startProcess(o.Allocator, filepath.Join(o.Dir, r.Name+".yaml"), o.AllocatorEnv, logFile, o.SampleEvery)
	if err != nil {
		return err
	}
	r.proc = p
	return nil
}

// waitComplete polls until every kept target is served exactly once.
func (r *Result) waitComplete(ctx context.Context, o Options, logf func(string, ...any)) error {
	timeout := o.Timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base, err := r.proc.BaseURL(ctx)
	if err != nil {
		return err
	}
	r.ListeningSeconds = round(time.Since(r.proc.started).Seconds(), 3)
	r.poll = &poller{base: base, client: &http.Client{Timeout: 2 * time.Minute}, workers: 4}
	if secs := min(int(o.StartProfile.Seconds()), 60); secs > 0 {
		// Not bound to ctx: the profile runs on after completion, and Run
		// waits for it before the idle window.
		r.startProfile = make(chan error, 1)
		go func() {
			r.startProfile <- r.saveProfile(context.WithoutCancel(ctx), o.Dir, "start-cpu", secs)
		}()
	}
	var last Check
	for {
		r.Rounds++
		roundStart := time.Now()
		chk, err := r.poll.check(ctx, r.want, r.cols)
		switch {
		case err == nil && chk.OK():
			r.CompleteSeconds = round(time.Since(r.proc.started).Seconds(), 3)
			r.CompleteRoundSeconds = round(time.Since(roundStart).Seconds(), 3)
			st, err := procfs.Status(r.proc.PID())
			if err != nil {
				return err
			}
			r.RSSPeakStartMiB = round(mib(st.HWM), 1)
			logf("allocator %s complete after %.2fs (round of %.2fs, %d rounds)", r.Name, r.CompleteSeconds, r.CompleteRoundSeconds, r.Rounds)
			return nil
		case err == nil:
			last = chk
		case !errors.Is(err, errNotReady) && ctx.Err() == nil:
			return fmt.Errorf("allocator %s: %w", r.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("allocator %s: not complete after %s: %s", r.Name, timeout, last)
		case <-r.proc.Exited():
			return fmt.Errorf("allocator %s exited with code %d", r.Name, r.proc.ExitCode())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// saveHeap reads and classifies the heap profile and keeps it in dir.
func (r *Result) saveHeap(ctx context.Context, dir string) (Heap, error) {
	h, raw, err := r.poll.heapProfile(ctx)
	if err != nil {
		return Heap{}, fmt.Errorf("allocator %s: heap profile: %w", r.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, r.Name+".heap.pb.gz"), raw, 0o600); err != nil {
		return Heap{}, fmt.Errorf("save heap profile: %w", err)
	}
	return h, nil
}

// saveIdleProfile saves a CPU profile of the allocator over the idle window
// (whole seconds, at most the 60 the server allows, a second short of the
// window so that the profile is in before it ends).
func (r *Result) saveIdleProfile(ctx context.Context, dir string, idle time.Duration) error {
	secs := min(int(idle.Seconds())-1, 60)
	if secs < 1 {
		return nil
	}
	return r.saveProfile(ctx, dir, "idle-cpu", secs)
}

// saveProfile saves a CPU profile of secs seconds as <dir>/<allocator>.<name>.pb.gz.
func (r *Result) saveProfile(ctx context.Context, dir, name string, secs int) error {
	raw, err := r.poll.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs))
	if err != nil {
		return fmt.Errorf("allocator %s: %s profile: %w", r.Name, name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, r.Name+"."+name+".pb.gz"), raw, 0o600); err != nil {
		return fmt.Errorf("save %s profile: %w", name, err)
	}
	return nil
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// loadAverage is the 1-minute load average, 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var v float64
	_, _ = fmt.Sscanf(strings.Fields(string(b))[0], "%g", &v)
	return v
}

// peakMiB is the high-water mark, but never below an RSS the run itself
// read: the kernel's VmHWM lags VmRSS by its per-thread counter caches
// (SPLIT_RSS_COUNTING), so a later VmHWM can read a few hundred KiB below
// an earlier VmRSS.
func peakMiB(hwm, steady float64, series []Sample) float64 {
	peak := max(hwm, steady)
	for _, s := range series {
		peak = max(peak, s.RSSMiB)
	}
	return round(peak, 1)
}
