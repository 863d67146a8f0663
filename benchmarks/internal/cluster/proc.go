package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

// process is a running allocator binary.
type process struct {
	cmd      *exec.Cmd
	started  time.Time
	addr     chan string
	exited   chan struct{}
	exitCode int
	once     sync.Once

	mu           sync.Mutex // guards samples
	samples      []Sample
	stopSampling chan struct{}
	sampling     sync.WaitGroup
}

// Sample is the allocator's resident memory at a time since its start.
type Sample struct {
	Seconds float64 `json:"s"`
	RSSMiB  float64 `json:"rss_mib"`
}

var statusRE = regexp.MustCompile(`status page at (http://[^ "/]+)/`)

// startProcess runs bin on the config file cfg, with env added to this
// process's environment and its output in log, and samples its RSS every
// interval until stop.
func startProcess(bin, cfg string, env []string, log io.Writer, interval time.Duration) (*process, error) {
	cmd := exec.Command(bin, "--config-file", cfg) //nolint:noctx // stopped with SIGTERM by stop, for a graceful exit
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = log
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start allocator: %w", err)
	}
	p := &process{cmd: cmd, started: time.Now(), addr: make(chan string, 1), exited: make(chan struct{}), stopSampling: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if m := statusRE.FindStringSubmatch(line); m != nil && !sent {
				p.addr <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		p.exitCode = cmd.ProcessState.ExitCode()
		if err != nil && p.exitCode == 0 {
			p.exitCode = -1
		}
		pw.Close()
		close(p.exited)
	}()
	p.sampling.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if st, err := procfs.Status(p.pid()); err == nil {
				p.mu.Lock()
				p.samples = append(p.samples, Sample{Seconds: round(time.Since(p.started).Seconds(), 2), RSSMiB: round(mib(st.RSS), 1)})
				p.mu.Unlock()
			}
			select {
			case <-p.stopSampling:
				return
			case <-p.exited:
				return
			case <-t.C:
			}
		}
	})
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// wait returns the allocator's base URL once it listens.
func (p *process) wait(ctx context.Context) (string, error) {
	select {
	case addr := <-p.addr:
		return addr, nil
	case <-p.exited:
		return "", fmt.Errorf("allocator exited with code %d before listening (see its log)", p.exitCode)
	case <-ctx.Done():
		return "", fmt.Errorf("allocator did not report its address: %w", ctx.Err())
	}
}

// series returns the RSS samples so far.
func (p *process) series() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sample(nil), p.samples...)
}

// stop sends SIGTERM, waits up to 20 s, then kills; it returns the exit code.
func (p *process) stop() int {
	p.once.Do(func() {
		close(p.stopSampling)
		p.sampling.Wait()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p.exitCode
}

func mib[T int64 | uint64 | int](n T) float64 { return float64(n) / (1 << 20) }

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
