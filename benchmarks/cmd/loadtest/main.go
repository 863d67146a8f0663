// Command loadtest runs the real allocator program on a generated fleet and
// measures it as a whole process: the time until every target is allocated,
// the allocator's resident memory (peak and current, from /proc), and the
// latency and throughput of the http_sd endpoint the collectors poll,
// GET /jobs/<job>/targets?collector_id=<collector>, under a bounded load.
//
// It writes N targets (the benchmarks' synthetic Kubernetes fleet, about 40
// meta labels each) as file_sd files and an allocator config with a static
// list of collectors and one job per file, with the relabel_configs
// prometheus-operator generates for a ServiceMonitor. It starts the allocator
// binary on a loopback port, waits for /readyz and for every kept target to
// be allocated, runs the load (vegeta, a fixed number of workers, for a fixed
// time and at most -max-requests requests), checks that every kept target is
// served to exactly one collector, stops the allocator and prints a table and
// a JSON summary.
//
//	make build
//	go -C benchmarks run ./cmd/loadtest -allocator $PWD/bin/allocator -targets 100000 -duration 20s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/shardwise/shardwise/benchmarks/internal/allocproc"
	"github.com/shardwise/shardwise/benchmarks/internal/command"
	"github.com/shardwise/shardwise/benchmarks/internal/fleet"
	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the command's flags.
type options struct {
	allocator   string
	targets     int
	jobs        int
	collectors  int
	duration    time.Duration
	workers     int
	rate        int
	maxRequests int
	readyWait   time.Duration
	dir         string
	keep        bool
	jsonOut     string
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := command.FlagSet("loadtest", stderr)
	var o options
	fs.StringVar(&o.allocator, "allocator", "./bin/allocator", "The allocator binary (make build).")
	fs.IntVar(&o.targets, "targets", 100_000, "Discovered targets (7% are dropped by relabeling).")
	fs.IntVar(&o.jobs, "jobs", 100, "Scrape jobs (ServiceMonitors).")
	fs.IntVar(&o.collectors, "collectors", 10, "Static collectors.")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "Load duration.")
	fs.IntVar(&o.workers, "workers", 8, "Concurrent requests (fixed).")
	fs.IntVar(&o.rate, "rate", 0, "Requests per second; 0 sends as fast as the workers go.")
	fs.IntVar(&o.maxRequests, "max-requests", 2_000_000, "Stop the load after this many requests.")
	fs.DurationVar(&o.readyWait, "ready-timeout", 5*time.Minute, "How long to wait for every target to be allocated.")
	fs.StringVar(&o.dir, "dir", "", "Where to write the config and target files; a temporary directory when empty.")
	fs.BoolVar(&o.keep, "keep", false, "Keep the generated files and the allocator log.")
	fs.StringVar(&o.jsonOut, "json", "", "Also write the JSON summary to this file.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.targets < 1 || o.jobs < 1 || o.collectors < 1 || o.workers < 1 || o.duration <= 0 || o.maxRequests < 1 {
		fmt.Fprintln(stderr, "loadtest: -targets, -jobs, -collectors, -workers, -max-requests and -duration must be positive")
		return 2
	}
	sum, err := loadtest(context.Background(), o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
		return 1
	}
	printTable(stdout, sum)
	b, _ := json.MarshalIndent(sum, "", "  ")
	fmt.Fprintf(stdout, "%s\n", b)
	if o.jsonOut != "" {
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "loadtest: %v\n", err)
			return 1
		}
	}
	if sum.Errors > 0 || !sum.Consistent {
		return 1
	}
	return 0
}

// Summary is the command's result, printed as JSON.
type Summary struct {
	Targets        int     `json:"targets"`
	KeptTargets    int     `json:"kept_targets"`
	Jobs           int     `json:"jobs"`
	Collectors     int     `json:"collectors"`
	TargetFilesMB  float64 `json:"target_files_mb"`
	ReadySeconds   float64 `json:"ready_seconds"`     // start to /readyz 200
	AllocatedSecs  float64 `json:"allocated_seconds"` // start to every kept target allocated
	RSSIdleMB      float64 `json:"rss_idle_mb"`       // VmRSS once allocated, before the load
	PeakRSSStartMB float64 `json:"peak_rss_start_mb"` // VmHWM once allocated: start-up peak
	RSSLoadMaxMB   float64 `json:"rss_load_max_mb"`   // largest VmRSS sampled during the load
	PeakRSSMB      float64 `json:"peak_rss_mb"`       // VmHWM at the end: the whole run's peak

	Duration       float64  `json:"duration_seconds"`
	Workers        int      `json:"workers"`
	Requests       uint64   `json:"requests"`
	RequestsPerS   float64  `json:"requests_per_second"`
	Errors         uint64   `json:"errors"`
	ErrorMessages  []string `json:"error_messages,omitempty"`
	P50ms          float64  `json:"p50_ms"`
	P90ms          float64  `json:"p90_ms"`
	P99ms          float64  `json:"p99_ms"`
	MaxMs          float64  `json:"max_ms"`
	MeanMs         float64  `json:"mean_ms"`
	MBPerS         float64  `json:"response_mb_per_second"`
	MeanResponseKB float64  `json:"mean_response_kb"`
	AllocatorCPU   float64  `json:"allocator_cpu_seconds_during_load"`

	Consistent bool   `json:"consistent"` // every kept target served to exactly one collector
	ExitCode   int    `json:"allocator_exit_code"`
	Dir        string `json:"dir,omitempty"`
}

func loadtest(ctx context.Context, o options, logw io.Writer) (*Summary, error) {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "shardwise-loadtest-")
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if !o.keep && o.dir == "" {
		defer os.RemoveAll(dir)
	}
	f := fleet.New(o.targets, o.jobs)
	fmt.Fprintf(logw, "loadtest: writing %d targets in %d jobs to %s\n", o.targets, o.jobs, dir)
	cfgPath, size, err := write(dir, f, o.collectors)
	if err != nil {
		return nil, err
	}
	sum := &Summary{
		Targets:       o.targets,
		KeptTargets:   f.Kept(),
		Jobs:          o.jobs,
		Collectors:    o.collectors,
		TargetFilesMB: mb(size),
		Workers:       o.workers,
	}
	if o.keep || o.dir != "" {
		sum.Dir = dir
	}

	logFile, err := os.Create(filepath.Join(dir, "allocator.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	fmt.Fprintf(logw, "loadtest: starting %s\n", o.allocator)
	started := time.Now()
	a, err := allocproc.Start(o.allocator, cfgPath, nil, logFile)
	if err != nil {
		return nil, err
	}
	defer a.Stop() // a no-op once stopped below
	listenCtx, cancel := context.WithTimeout(ctx, o.readyWait)
	defer cancel()
	base, err := a.BaseURL(listenCtx)
	if err != nil {
		return nil, err
	}
	if err := measure(ctx, base, started, f, o, sum, a.PID(), logw, a.Exited()); err != nil {
		return nil, err
	}
	sum.ExitCode = a.Stop()
	return sum, nil
}

// measure waits for the allocator at base, started at started, to allocate
// every target, then runs the load and the consistency check, filling sum.
// pid is the allocator's process id, 0 when it runs in this process (no
// memory or CPU figures then); exited is closed when it exits (nil: never).
func measure(ctx context.Context, base string, started time.Time, f *fleet.Fleet, o options, sum *Summary, pid int, logw io.Writer, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 30 * time.Second}
	kept := f.Kept()
	if err := waitAllocated(ctx, client, base, started, kept, o.readyWait, sum, exited); err != nil {
		return err
	}
	if pid > 0 {
		st, err := procfs.Status(pid)
		if err != nil {
			return err
		}
		sum.RSSIdleMB, sum.PeakRSSStartMB = mb(st.RSS), mb(st.HWM)
	}
	fmt.Fprintf(logw, "loadtest: %d targets allocated after %.1fs; load for %s with %d workers\n", kept, sum.AllocatedSecs, o.duration, o.workers)

	m, bytesIn, err := sampledAttack(base, f, o, pid, sum)
	if err != nil {
		return err
	}
	sum.addLoad(m, bytesIn)

	err = consistent(ctx, client, base, f, o.collectors)
	sum.Consistent = err == nil
	if err != nil {
		fmt.Fprintf(logw, "loadtest: inconsistent assignment: %v\n", err)
	}
	return nil
}

// waitAllocated waits, for at most readyWait in all, for the allocator at
// base to be ready and then to have allocated kept targets, and records both
// times since started in sum.
func waitAllocated(ctx context.Context, client *http.Client, base string, started time.Time, kept int, readyWait time.Duration, sum *Summary, exited <-chan struct{}) error {
	deadline := time.Now().Add(readyWait)
	for {
		if ok, _ := get(ctx, client, base+"/readyz"); ok {
			break
		}
		if err := waitTick(deadline, exited, "/readyz"); err != nil {
			return err
		}
	}
	sum.ReadySeconds = time.Since(started).Seconds()
	for {
		n, err := allocated(ctx, client, base)
		if err == nil && n == kept {
			break
		}
		if err := waitTick(deadline, exited, fmt.Sprintf("%d targets allocated (have %d)", kept, n)); err != nil {
			return err
		}
	}
	sum.AllocatedSecs = time.Since(started).Seconds()
	return nil
}

// sampledAttack runs the load (attack) and, when pid is known, samples the
// allocator's memory every 100 ms and its CPU time while it runs, into sum.
func sampledAttack(base string, f *fleet.Fleet, o options, pid int, sum *Summary) (*vegeta.Metrics, uint64, error) {
	var (
		sampler sync.WaitGroup
		done    = make(chan struct{})
		maxRSS  uint64
		cpu0    = cpuSeconds(pid)
	)
	if pid > 0 {
		sampler.Go(func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				if st, err := procfs.Status(pid); err == nil {
					maxRSS = max(maxRSS, st.RSS)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		})
	}
	m, bytesIn := attack(base, f, o)
	close(done)
	sampler.Wait()
	if pid > 0 {
		sum.AllocatorCPU = cpuSeconds(pid) - cpu0
		sum.RSSLoadMaxMB = mb(maxRSS)
		st, err := procfs.Status(pid)
		if err != nil {
			return nil, 0, err
		}
		sum.PeakRSSMB = mb(st.HWM)
	}
	return m, bytesIn, nil
}

// addLoad records the load's figures: vegeta's metrics and the response
// bytes read.
func (s *Summary) addLoad(m *vegeta.Metrics, bytesIn uint64) {
	s.Duration = m.Duration.Seconds()
	s.Requests = m.Requests
	s.RequestsPerS = m.Rate
	s.Errors = m.Requests - uint64(m.StatusCodes["200"])
	s.ErrorMessages = m.Errors
	s.P50ms = ms(m.Latencies.P50)
	s.P90ms = ms(m.Latencies.P90)
	s.P99ms = ms(m.Latencies.P99)
	s.MaxMs = ms(m.Latencies.Max)
	s.MeanMs = ms(m.Latencies.Mean)
	if secs := (m.Duration + m.Wait).Seconds(); secs > 0 {
		s.MBPerS = mb(bytesIn) / secs
	}
	if m.Requests > 0 {
		s.MeanResponseKB = float64(bytesIn) / float64(m.Requests) / 1e3
	}
}

func waitTick(deadline time.Time, exited <-chan struct{}, what string) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("timed out waiting for %s", what)
	}
	select {
	case <-exited:
		return fmt.Errorf("allocator exited while waiting for %s", what)
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

// write writes the target files and the allocator config into dir and
// returns the config's path and the target files' total size.
func write(dir string, f *fleet.Fleet, collectors int) (string, int64, error) {
	tdir := filepath.Join(dir, "targets")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return "", 0, err
	}
	var size int64
	file := func(j fleet.Job) string { return fmt.Sprintf("targets/%s.json", strings.ReplaceAll(j.Name, "/", "_")) }
	for _, j := range f.Jobs {
		n, err := writeTargets(filepath.Join(dir, file(j)), j)
		if err != nil {
			return "", 0, err
		}
		size += n
	}
	var b strings.Builder
	b.WriteString("# Generated by benchmarks/cmd/loadtest.\nlisten_addr: 127.0.0.1:0\nallocation_strategy: consistent-hashing\nfilter_strategy: relabel-config\ncollectors:\n")
	for i := range collectors {
		fmt.Fprintf(&b, "  - collector-%d\n", i)
	}
	b.WriteString("config:\n  global:\n    scrape_interval: 30s\n")
	for _, line := range strings.SplitAfter(f.ScrapeConfigs(fleet.FileSD(file)), "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	path := filepath.Join(dir, "allocator.yaml")
	return path, size, os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeTargets writes one job's targets as a file_sd file: one group per
// target, whose labels are the target's discovered labels (file_sd has no
// per-target labels), in discovery order.
func writeTargets(path string, j fleet.Job) (int64, error) {
	out, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	w := bufio.NewWriterSize(out, 1<<20)
	type group struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	enc := json.NewEncoder(w)
	_, _ = w.WriteString("[\n") // errors surface at Flush
	first := true
	for _, tg := range j.Groups(0) {
		for _, tl := range tg.Targets {
			g := group{Labels: make(map[string]string, len(tg.Labels)+len(tl))}
			for k, v := range tg.Labels {
				g.Labels[string(k)] = string(v)
			}
			for k, v := range tl {
				if k == "__address__" {
					g.Targets = []string{string(v)}
					continue
				}
				g.Labels[string(k)] = string(v)
			}
			if !first {
				_, _ = w.WriteString(",")
			}
			first = false
			if err := enc.Encode(g); err != nil {
				return 0, err
			}
		}
	}
	_, _ = w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		return 0, err
	}
	st, err := out.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), out.Close()
}

// attack runs the load: GET /jobs/<job>/targets?collector_id=<c>, cycling
// over every (job, collector). It returns vegeta's metrics and the response
// bytes read.
func attack(base string, f *fleet.Fleet, o options) (*vegeta.Metrics, uint64) {
	var urls []string
	for c := range o.collectors {
		for _, j := range f.Jobs {
			urls = append(urls, base+"/jobs/"+url.QueryEscape(j.Name)+"/targets?collector_id=collector-"+strconv.Itoa(c))
		}
	}
	var next atomic.Uint64
	limit := uint64(o.maxRequests)
	targeter := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		if i >= limit {
			return vegeta.ErrNoTargets
		}
		t.Method = http.MethodGet
		t.URL = urls[i%uint64(len(urls))]
		return nil
	}
	ct := &countingTransport{base: &http.Transport{
		MaxIdleConnsPerHost: o.workers,
		MaxConnsPerHost:     o.workers,
		DisableCompression:  true,
	}}
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Transport: ct, Timeout: 30 * time.Second}),
		vegeta.Workers(uint64(o.workers)),
		vegeta.MaxWorkers(uint64(o.workers)),
		vegeta.MaxBody(0), // count the bytes, do not keep them
	)
	pacer := vegeta.ConstantPacer{Freq: o.rate, Per: time.Second}
	var m vegeta.Metrics
	for res := range atk.Attack(targeter, pacer, o.duration, "loadtest") {
		if res.Error == vegeta.ErrNoTargets.Error() {
			continue // the request cap, not a failed request
		}
		m.Add(res)
	}
	m.Close()
	ct.base.CloseIdleConnections()
	return &m, ct.n.Load()
}

// countingTransport counts the response body bytes read.
type countingTransport struct {
	base *http.Transport
	n    atomic.Uint64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &t.n}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Uint64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(uint64(n))
	return n, err
}

func get(ctx context.Context, c *http.Client, u string) (bool, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, nil
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK, b
}

var targetsRE = regexp.MustCompile(`(?m)^shardwise_allocator_targets\{collector="[^"]*"\} (\S+)$`)

// allocated returns the sum of shardwise_allocator_targets over collectors.
func allocated(ctx context.Context, c *http.Client, base string) (int, error) {
	ok, b := get(ctx, c, base+"/metrics")
	if !ok {
		return 0, errors.New("GET /metrics failed")
	}
	n := 0
	for _, m := range targetsRE.FindAllSubmatch(b, -1) {
		v, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			return 0, err
		}
		n += int(v)
	}
	return n, nil
}

// consistent requests every (collector, job) once and checks that every
// target the fleet keeps is served to exactly one collector and that no
// dropped target is served.
func consistent(ctx context.Context, c *http.Client, base string, f *fleet.Fleet, collectors int) error {
	type entry struct {
		Targets []string `json:"targets"`
	}
	for _, j := range f.Jobs {
		want := j.Discovered(0)
		served := map[string]int{}
		for i := range collectors {
			ok, b := get(ctx, c, base+"/jobs/"+url.QueryEscape(j.Name)+"/targets?collector_id=collector-"+strconv.Itoa(i))
			if !ok {
				return fmt.Errorf("job %s, collector-%d: request failed", j.Name, i)
			}
			var es []entry
			if err := json.Unmarshal(b, &es); err != nil {
				return fmt.Errorf("job %s, collector-%d: %w", j.Name, i, err)
			}
			for _, e := range es {
				for _, t := range e.Targets {
					served[t]++
				}
			}
		}
		for addr, t := range want {
			switch n := served[addr]; {
			case t.Kept && n != 1:
				return fmt.Errorf("job %s: kept target %s served %d times", j.Name, addr, n)
			case !t.Kept && n != 0:
				return fmt.Errorf("job %s: dropped target %s served %d times", j.Name, addr, n)
			}
		}
		for addr := range served {
			if _, ok := want[addr]; !ok {
				return fmt.Errorf("job %s: %s served but never discovered", j.Name, addr)
			}
		}
	}
	return nil
}

// cpuSeconds returns the user+system CPU time of pid, 0 when unknown.
func cpuSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	s, err := procfs.CPUSeconds(pid)
	if err != nil {
		return 0
	}
	return s
}

func mb[T int64 | uint64](n T) float64 { return float64(n) / 1e6 }
func ms(d time.Duration) float64       { return float64(d.Microseconds()) / 1e3 }

func printTable(w io.Writer, s *Summary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\t\n", k, v) }
	f1 := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	row("targets discovered / kept", fmt.Sprintf("%d / %d", s.Targets, s.KeptTargets))
	row("jobs / collectors", fmt.Sprintf("%d / %d", s.Jobs, s.Collectors))
	row("file_sd files (MB)", f1(s.TargetFilesMB))
	row("ready after (s)", f2(s.ReadySeconds))
	row("all targets allocated after (s)", f2(s.AllocatedSecs))
	row("RSS idle, allocated (MB)", f1(s.RSSIdleMB))
	row("peak RSS at start-up (MB)", f1(s.PeakRSSStartMB))
	row("max RSS during load (MB)", f1(s.RSSLoadMaxMB))
	row("peak RSS, whole run (MB)", f1(s.PeakRSSMB))
	row("load duration (s)", f1(s.Duration))
	row("workers", strconv.Itoa(s.Workers))
	row("requests", strconv.FormatUint(s.Requests, 10))
	row("requests/s", f1(s.RequestsPerS))
	row("errors", strconv.FormatUint(s.Errors, 10))
	row("latency p50 (ms)", f2(s.P50ms))
	row("latency p90 (ms)", f2(s.P90ms))
	row("latency p99 (ms)", f2(s.P99ms))
	row("latency max (ms)", f2(s.MaxMs))
	row("mean response (kB)", f1(s.MeanResponseKB))
	row("response MB/s", f1(s.MBPerS))
	row("allocator CPU during load (s)", f1(s.AllocatorCPU))
	row("consistent", strconv.FormatBool(s.Consistent))
	row("allocator exit code", strconv.Itoa(s.ExitCode))
	_ = tw.Flush()
	if len(s.ErrorMessages) > 0 {
		msgs := slices.Clone(s.ErrorMessages)
		if len(msgs) > 5 {
			msgs = msgs[:5]
		}
		fmt.Fprintf(w, "errors: %s\n", strings.Join(msgs, "; "))
	}
}
