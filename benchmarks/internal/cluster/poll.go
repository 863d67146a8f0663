package cluster

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/shardwise/shardwise/benchmarks/internal/procfs"
)

// PollOptions shape the collectors' polling load: every collector requests
// /scrape_configs and each job's /jobs/<job>/targets?collector_id= once per
// Interval, spread evenly (collectors start at random times), for Duration.
type PollOptions struct {
	Interval, Duration time.Duration
}

// PollResult is the load's outcome.
type PollResult struct {
	Collectors int     `json:"collectors"`
	Jobs       int     `json:"jobs"`
	Interval   float64 `json:"interval_seconds"`
	Duration   float64 `json:"duration_seconds"`
	Rate       float64 `json:"requests_per_second"`
	// Targets is /jobs/<job>/targets?collector_id=; ScrapeConfigs is
	// /scrape_configs.
	Targets       Latency `json:"targets"`
	ScrapeConfigs Latency `json:"scrape_configs"`
	// RSSMaxMiB is the largest VmRSS sampled during the load.
	RSSMaxMiB  float64 `json:"rss_max_mib"`
	CPUSeconds float64 `json:"allocator_cpu_seconds"`
}

// Latency summarises one kind of request.
type Latency struct {
	Requests uint64  `json:"requests"`
	Errors   uint64  `json:"errors"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
}

func pollLoad(r *Result, o PollOptions) (*PollResult, error) {
	var urls []string
	for _, c := range r.cols {
		urls = append(urls, r.poll.base+"/scrape_configs")
		for j := range r.want {
			urls = append(urls, r.poll.base+"/jobs/"+url.QueryEscape(j)+"/targets?collector_id="+url.QueryEscape(c))
		}
	}
	rate := float64(len(urls)) / o.Interval.Seconds()
	var next atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		i := next.Add(1) - 1
		t.Method = http.MethodGet
		t.URL = urls[i%uint64(len(urls))]
		return nil
	}
	atk := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}}),
		vegeta.Workers(16),
		vegeta.MaxWorkers(512),
		vegeta.MaxBody(0),
	)
	cpu0, err := procfs.CPUSeconds(r.proc.PID())
	if err != nil {
		return nil, err
	}
	from := time.Since(r.proc.started).Seconds()
	pacer := vegeta.ConstantPacer{Freq: int(rate + 0.5), Per: time.Second}
	var targets, configs vegeta.Metrics
	for res := range atk.Attack(targeter, pacer, o.Duration, "collectors") {
		if strings.HasSuffix(res.URL, "/scrape_configs") {
			configs.Add(res)
		} else {
			targets.Add(res)
		}
	}
	targets.Close()
	configs.Close()
	cpu1, err := procfs.CPUSeconds(r.proc.PID())
	if err != nil {
		return nil, err
	}
	out := &PollResult{
		Collectors: len(r.cols), Jobs: len(r.want),
		Interval: o.Interval.Seconds(), Duration: o.Duration.Seconds(), Rate: round(rate, 1),
		Targets: latency(&targets), ScrapeConfigs: latency(&configs),
		CPUSeconds: round(cpu1-cpu0, 2),
	}
	for _, s := range r.proc.series() {
		if s.Seconds >= from {
			out.RSSMaxMiB = max(out.RSSMaxMiB, s.RSSMiB)
		}
	}
	return out, nil
}

func latency(m *vegeta.Metrics) Latency {
	ms := func(d time.Duration) float64 { return round(float64(d.Microseconds())/1e3, 2) }
	return Latency{
		Requests: m.Requests, Errors: m.Requests - uint64(m.StatusCodes["200"]),
		P50ms: ms(m.Latencies.P50), P99ms: ms(m.Latencies.P99), MaxMs: ms(m.Latencies.Max),
	}
}
