package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// Bounds for everything that waits. Convergence is slow by design: the
// receiver's discovery manager forwards target updates at most every 5 s and
// its scrape manager reloads at most every 5 s, on top of the 1 s polls.
const (
	readyTimeout       = 60 * time.Second
	convergeTimeout    = 120 * time.Second
	pollEvery          = 500 * time.Millisecond
	httpTimeout        = 5 * time.Second
	stopGrace          = 15 * time.Second
	scrapeInterval     = "1s"
	recentScrapeWindow = 3500 * time.Millisecond // a bit over three scrape intervals
)

// allocatorBin returns the allocator binary under test, or skips the test.
func allocatorBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SHARDWISE_ALLOCATOR_BIN")
	if bin == "" {
		t.Skip("SHARDWISE_ALLOCATOR_BIN is not set: run `make test-e2e` in the repository root, " +
			"or build the allocator (`make build`) and set SHARDWISE_ALLOCATOR_BIN=<repo>/bin/allocator")
	}
	abs, err := filepath.Abs(bin)
	require.NoError(t, err)
	st, err := os.Stat(abs)
	require.NoError(t, err, "SHARDWISE_ALLOCATOR_BIN is set but not usable")
	require.False(t, st.IsDir(), "SHARDWISE_ALLOCATOR_BIN %s is a directory", abs)
	return abs
}

// logBuffer collects a child's or a component's log lines so that a failing
// test can show the end of them. It is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) Sync() error { return nil }

// tail returns the last n lines.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d earlier lines)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// dumpOnFailure logs the tail of b when the test has failed by cleanup time.
func dumpOnFailure(t *testing.T, what string, b *logBuffer) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s ---\n%s", what, b.tail(120))
		}
	})
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port that was free a
// moment ago, for a child process to listen on.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// target is one loopback HTTP server serving one series,
// shardwise_e2e_target{target="<name>"}, which identifies it in what the
// receivers deliver whatever relabeling does to job and instance.
type target struct {
	name    string
	job     string
	addr    string // host:port the server listens on
	dropped bool   // the job's relabel_configs drop it: never allocated, never scraped
}

const targetMetric = "shardwise_e2e_target"

// startTarget starts a metrics server on 127.0.0.1 (httptest listens on
// loopback only) and stops it at cleanup.
func startTarget(t *testing.T, name, job string, value int) target {
	t.Helper()
	body := fmt.Sprintf("# HELP %[1]s A target of the shardwise end-to-end test.\n# TYPE %[1]s gauge\n%[1]s{target=%[2]q} %[3]d\n",
		targetMetric, name, value)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return target{name: name, job: job, addr: srv.Listener.Addr().String()}
}

// allocatorProcess is the allocator binary running as a child process.
type allocatorProcess struct {
	url        string // http://127.0.0.1:<port>
	configFile string
	log        *logBuffer
	bin, addr  string
	env        []string
	dir        string
	cmd        *exec.Cmd
	exited     chan struct{} // closed when the process has exited
	exitErr    error         // valid after exited is closed
}

// startAllocator writes cfg to a file in a temporary directory and starts the
// allocator on it, listening on a free loopback port. The process gets SIGTERM
// at cleanup and SIGKILL if it has not exited stopGrace later; the test fails
// if it needed the SIGKILL. extraEnv is appended to the environment.
func startAllocator(t *testing.T, bin string, cfg map[string]any, extraEnv ...string) *allocatorProcess {
	t.Helper()
	dir := t.TempDir()
	p := &allocatorProcess{
		configFile: filepath.Join(dir, "targetallocator.yaml"),
		log:        &logBuffer{},
		exited:     make(chan struct{}),
	}
	writeConfig(t, p.configFile, cfg)
	dumpOnFailure(t, "allocator output", p.log)

	p.bin, p.addr, p.dir, p.env = bin, freeLoopbackAddr(t), dir, append(os.Environ(), extraEnv...)
	p.url = "http://" + p.addr
	p.launch(t)

	t.Cleanup(func() {
		select {
		case <-p.exited:
			t.Errorf("allocator exited before the test ended: %v", p.exitErr)
			return
		default:
		}
		p.stop(t)
	})

	p.waitReady(t)
	return p
}

// launch starts the allocator process on p's config and address.
func (p *allocatorProcess) launch(t *testing.T) {
	t.Helper()
	cmd := exec.Command(p.bin, "--config-file="+p.configFile, "--listen-addr="+p.addr)
	cmd.Dir = p.dir
	cmd.Env = p.env
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	cmd.SysProcAttr = childProcAttr()
	cmd.WaitDelay = stopGrace
	require.NoError(t, cmd.Start(), "start allocator %s", p.bin)
	t.Logf("allocator pid %d listening on %s with %s", cmd.Process.Pid, p.addr, p.configFile)
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() {
		p.exitErr = cmd.Wait()
		close(exited)
	}()
}

// stop sends SIGTERM and waits for the exit; it fails the test if a SIGKILL
// was needed after stopGrace.
func (p *allocatorProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		t.Logf("allocator stopped on SIGTERM: %v", exitStatus(p.exitErr))
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("allocator did not exit within %s of SIGTERM; killed", stopGrace)
	}
}

// restart stops the allocator and starts it again on the same config and
// address, without waiting for it to be ready.
func (p *allocatorProcess) restart(t *testing.T) {
	t.Helper()
	p.stop(t)
	p.launch(t)
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// waitReady polls /readyz until it answers 200, failing early if the process
// exits.
func (p *allocatorProcess) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: httpTimeout}
	deadline := time.Now().Add(readyTimeout)
	last := "no answer yet"
	for {
		resp, err := client.Get(p.url + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocator not ready within %s: GET /readyz: %s", readyTimeout, last)
		}
		select {
		case <-p.exited:
			t.Fatalf("allocator exited before it became ready: %v", p.exitErr)
		case <-t.Context().Done():
			t.Fatal("test context done while waiting for /readyz")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeConfig writes cfg as YAML in place (truncate and write, as `kubectl
// cp` or an editor saving in place does), so a watcher on the file or on its
// directory sees it.
func writeConfig(t *testing.T, path string, cfg map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// allocatorConfig is the allocator configuration shared by the tests: the keys
// of the OpenTelemetry Operator's targetallocator.yaml plus the static
// collector list.
func allocatorConfig(collectors []string, scrapeConfigs []any) map[string]any {
	return map[string]any{
		"collectors":          collectors,
		"allocation_strategy": "consistent-hashing",
		"filter_strategy":     "relabel-config",
		"config": map[string]any{
			"scrape_configs": scrapeConfigs,
		},
	}
}

// api is a client for the allocator's HTTP API as the receiver uses it.
type api struct {
	base   string
	client *http.Client
}

func newAPI(base string) *api {
	return &api{base: base, client: &http.Client{Timeout: httpTimeout}}
}

// targetGroup is one entry of /jobs/<job>/targets?collector_id=X.
type targetGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// getJSON GETs path and decodes a 200 application/json answer into out.
func (a *api) getJSON(path string, out any) error {
	resp, err := a.client.Get(a.base + path)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: read body: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d, body %q", path, resp.StatusCode, truncate(body))
	}
	if ct := resp.Header.Get("Content-Type"); !isJSONContentType(ct) {
		return fmt.Errorf("GET %s: Content-Type %q, Prometheus http_sd needs application/json; body %q", path, ct, truncate(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decode %q: %w", path, truncate(body), err)
	}
	return nil
}

// isJSONContentType accepts what Prometheus' http_sd accepts.
func isJSONContentType(ct string) bool {
	return ct == "application/json" || ct == "application/json; charset=utf-8" || ct == "application/json;charset=utf-8"
}

func truncate(b []byte) string {
	const n = 400
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func jobTargetsPath(job string) string {
	return "/jobs/" + url.QueryEscape(job) + "/targets"
}

// targets returns what collector is assigned in job, exactly as the
// receiver's http_sd asks for it.
func (a *api) targets(job, collector string) ([]targetGroup, error) {
	var groups []targetGroup
	err := a.getJSON(jobTargetsPath(job)+"?collector_id="+url.QueryEscape(collector), &groups)
	if err == nil && groups == nil {
		return nil, fmt.Errorf("GET %s?collector_id=%s: null, want a JSON array", jobTargetsPath(job), collector)
	}
	return groups, err
}

// assignment asks the allocator, per job and collector, where each target
// address is assigned, and checks that no address is served to two
// collectors and that every entry holds one target.
func (a *api) assignment(jobs, collectors []string) (map[string]string, error) {
	owner := map[string]string{} // job + " " + address -> collector
	for _, job := range jobs {
		for _, c := range collectors {
			groups, err := a.targets(job, c)
			if err != nil {
				return nil, err
			}
			for _, g := range groups {
				if len(g.Targets) != 1 {
					return nil, fmt.Errorf("job %q collector %s: entry with %d targets %v, want one target per entry", job, c, len(g.Targets), g.Targets)
				}
				if a := g.Labels["__address__"]; a != g.Targets[0] {
					return nil, fmt.Errorf("job %q collector %s: target %s has labels.__address__ %q; the contract serves the discovered labels, __address__ included", job, c, g.Targets[0], a)
				}
				key := job + " " + g.Targets[0]
				if prev, ok := owner[key]; ok {
					return nil, fmt.Errorf("job %q target %s served to both %s and %s", job, g.Targets[0], prev, c)
				}
				owner[key] = c
			}
		}
	}
	return owner, nil
}

// contract checks the parts of the wire contract the receiver depends on
// beyond the per-collector target lists: /scrape_configs is a JSON object with
// every job, /jobs links every job under its query-escaped name, the
// collector-less target listing names every collector, and unknown jobs and
// collectors get an empty list.
func (a *api) contract(jobs, collectors []string) error {
	var scrapeConfigs map[string]map[string]any
	if err := a.getJSON("/scrape_configs", &scrapeConfigs); err != nil {
		return err
	}
	for _, job := range jobs {
		sc, ok := scrapeConfigs[job]
		if !ok {
			return fmt.Errorf("/scrape_configs lacks job %q; has %v", job, keys(scrapeConfigs))
		}
		if sc["job_name"] != job {
			return fmt.Errorf("/scrape_configs[%q].job_name is %v", job, sc["job_name"])
		}
	}

	var links map[string]map[string]string
	if err := a.getJSON("/jobs", &links); err != nil {
		return err
	}
	for _, job := range jobs {
		if got, want := links[job]["_link"], jobTargetsPath(job); got != want {
			return fmt.Errorf("/jobs[%q]._link is %q, want %q; /jobs has %v", job, got, want, keys(links))
		}
	}

	for _, job := range jobs {
		var byCollector map[string]json.RawMessage
		if err := a.getJSON(jobTargetsPath(job), &byCollector); err != nil {
			return err
		}
		for _, c := range collectors {
			if _, ok := byCollector[c]; !ok {
				return fmt.Errorf("GET %s without collector_id lacks collector %s; has %v", jobTargetsPath(job), c, keys(byCollector))
			}
		}
	}

	if groups, err := a.targets("no such job/0", collectors[0]); err != nil || len(groups) != 0 {
		return fmt.Errorf("unknown job: got %v, %v; want [] and no error", groups, err)
	}
	if groups, err := a.targets(jobs[0], "no-such-collector"); err != nil || len(groups) != 0 {
		return fmt.Errorf("unknown collector: got %v, %v; want [] and no error", groups, err)
	}
	return nil
}

// expectCollectors checks that the collector-less target listing of every
// job is keyed by exactly the given collectors.
func (a *api) expectCollectors(jobs, collectors []string) error {
	want := slices.Sorted(slices.Values(collectors))
	for _, job := range jobs {
		var byCollector map[string]json.RawMessage
		if err := a.getJSON(jobTargetsPath(job), &byCollector); err != nil {
			return err
		}
		if got := keys(byCollector); !slices.Equal(got, want) {
			return fmt.Errorf("GET %s lists collectors %v, want %v", jobTargetsPath(job), got, want)
		}
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// eventually calls check until it returns nil, every pollEvery, and fails the
// test with the last error once timeout has passed, or as soon as the
// allocator process exits.
func (p *allocatorProcess) eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := check()
		if err == nil {
			t.Logf("%s: reached after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s; last mismatch: %v", what, timeout, err)
		}
		select {
		case <-p.exited:
			t.Fatalf("%s: allocator exited (%v); last mismatch: %v", what, p.exitErr, err)
		case <-t.Context().Done():
			t.Fatalf("%s: test context done; last mismatch: %v", what, err)
		case <-time.After(pollEvery):
		}
	}
}

// expectExclusive compares what the allocator assigns (owner: job+" "+address
// -> collector) with what the receivers scraped recently (seen: target name ->
// collectors): every live target is assigned to exactly one of active and
// scraped by that collector only, dropped targets are neither assigned nor
// scraped, and nothing else is scraped.
func expectExclusive(targets []target, active []string, owner map[string]string, seen map[string][]string) error {
	var problems []string
	known := map[string]bool{}
	served := 0
	for _, tg := range targets {
		known[tg.name] = true
		c, assigned := owner[tg.job+" "+tg.addr]
		got := seen[tg.name]
		switch {
		case tg.dropped:
			if assigned {
				problems = append(problems, fmt.Sprintf("%s (%q) is dropped by relabel_configs but assigned to %s", tg.name, tg.job, c))
			}
			if len(got) > 0 {
				problems = append(problems, fmt.Sprintf("%s is dropped by relabel_configs but scraped by %v", tg.name, got))
			}
			continue
		case !assigned:
			problems = append(problems, fmt.Sprintf("%s (%q %s) is not assigned to any collector", tg.name, tg.job, tg.addr))
		case !slices.Contains(active, c):
			problems = append(problems, fmt.Sprintf("%s is assigned to %s, which is not in the collector list %v", tg.name, c, active))
		case !slices.Equal(got, []string{c}):
			problems = append(problems, fmt.Sprintf("%s is assigned to %s but recently scraped by %v", tg.name, c, got))
		}
		if assigned {
			served++
		}
	}
	if len(owner) != served {
		problems = append(problems, fmt.Sprintf("the allocator serves %d targets, %d of them ours", len(owner), served))
	}
	for name, cs := range seen {
		if !known[name] {
			problems = append(problems, fmt.Sprintf("unknown target %q scraped by %v", name, cs))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// moved counts the targets whose collector differs between two assignments.
func moved(before, after map[string]string) int {
	n := 0
	for k, c := range after {
		if prev, ok := before[k]; ok && prev != c {
			n++
		}
	}
	return n
}

// countByCollector summarises an assignment for the log.
func countByCollector(owner map[string]string) map[string]int {
	out := map[string]int{}
	for _, c := range owner {
		out[c]++
	}
	return out
}

// withTimeout returns a context for one bounded operation.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
