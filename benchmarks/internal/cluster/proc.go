package cluster

import (
	"io"
	"sync"
	"time"

	"github.com/shardwise/shardwise/benchmarks/internal/allocproc"
	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

// process is a running allocator binary whose RSS is sampled.
type process struct {
	*allocproc.Process
	started time.Time

	mu           sync.Mutex // guards samples
	samples      []Sample
	stopSampling chan struct{}
	sampling     sync.WaitGroup
	once         sync.Once
}

// Sample is the allocator's resident memory at a time since its start.
type Sample struct {
	Seconds float64 `json:"s"`
	RSSMiB  float64 `json:"rss_mib"`
}

// startProcess runs bin on the config file cfg, with env added to this
// process's environment and its output in log, and samples its RSS every
// interval until stop.
func startProcess(bin, cfg string, env []string, log io.Writer, interval time.Duration) (*process, error) {
	ap, err := allocproc.Start(bin, cfg, env, log)
	if err != nil {
		return nil, err
	}
	p := &process{Process: ap, started: time.Now(), stopSampling: make(chan struct{})}
	p.sampling.Go(func() { p.sample(interval) })
	return p, nil
}

// sample records the RSS every interval until stop or the process exits.
func (p *process) sample(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if st, err := procfs.Status(p.PID()); err == nil {
			p.mu.Lock()
			p.samples = append(p.samples, Sample{Seconds: round(time.Since(p.started).Seconds(), 2), RSSMiB: round(mib(st.RSS), 1)})
			p.mu.Unlock()
		}
		select {
		case <-p.stopSampling:
			return
		case <-p.Exited():
			return
		case <-t.C:
		}
	}
}

// series returns the RSS samples so far.
func (p *process) series() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Sample(nil), p.samples...)
}

// stop ends the sampling, then the process (allocproc.Process.Stop); it
// returns the exit code.
func (p *process) stop() int {
	p.once.Do(func() {
		close(p.stopSampling)
		p.sampling.Wait()
	})
	return p.Stop()
}

func mib[T int64 | uint64 | int](n T) float64 { return float64(n) / (1 << 20) }

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
