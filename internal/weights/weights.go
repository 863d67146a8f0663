// Package weights learns targets' scrape costs from what the collectors
// scraped: the OpenTelemetry Collector's Prometheus receiver emits
// scrape_samples_scraped for every target it scrapes, the pipeline sends it
// to the user's backend, and a Learner reads it back through the backend's
// Prometheus-compatible query API (GET /api/v1/query).
//
// Weights must not cause churn: each refresh moves a weight at most by a
// factor of 1+MaxChange, weights are kept on a logarithmic scale of 10 %
// steps (a target whose samples wobble by a few percent keeps its weight,
// and the assignment does not move), and when the API cannot be read the
// last weights stay until StaleAfter passes, then the allocator goes back to
// counting targets.
package weights

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shardwise/shardwise/allocation"
)

// DefaultQuery is the samples each target yields per scrape, averaged over
// a quarter of an hour.
const DefaultQuery = `avg_over_time(scrape_samples_scraped[15m])`

// Options configure a Learner.
type Options struct {
	// URL is the base URL of the Prometheus-compatible API
	// (http://prometheus:9090); /api/v1/query is appended.
	URL string
	// Query returns one sample per target, with its job and instance labels.
	// Empty means DefaultQuery.
	Query string
	// Interval is how often the API is read; zero means 5 minutes.
	Interval time.Duration
	// MaxChange bounds how much a weight moves per refresh: at most a
	// factor of 1+MaxChange either way. Zero means 0.5.
	MaxChange float64
	// StaleAfter is how long weights outlive a failing API; zero means
	// three intervals.
	StaleAfter time.Duration
	// Client does the requests; nil means one with a 30 s timeout.
	Client *http.Client
	Logger *slog.Logger
	Now    func() time.Time
}

// Learner turns query results into weights.
type Learner struct {
	opts    Options
	weights map[allocation.LearnedKey]float64
	lastOK  time.Time
}

// New returns a learner; the URL must be http or https.
func New(opts Options) (*Learner, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("weights: url %q is not an http(s) URL", opts.URL)
	}
	if opts.Query == "" {
		opts.Query = DefaultQuery
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Minute
	}
	if opts.MaxChange <= 0 {
		opts.MaxChange = 0.5
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 3 * opts.Interval
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Learner{opts: opts, weights: map[allocation.LearnedKey]float64{}}, nil
}

// Run refreshes every Interval, from now, and calls apply with each set of
// weights that differs from the last (nil: count targets), until ctx ends.
func (l *Learner) Run(ctx context.Context, apply func(map[allocation.LearnedKey]uint32)) {
	var last map[allocation.LearnedKey]uint32
	tick := time.NewTicker(l.opts.Interval)
	defer tick.Stop()
	for {
		ws, err := l.Refresh(ctx)
		if err != nil {
			l.opts.Logger.Warn("learned weights: query failed; keeping the last weights", "url", l.opts.URL, "err", err)
		}
		if !equal(ws, last) {
			apply(ws)
			last = ws
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Refresh reads the API once and returns the weights to use: the last ones
// when the read fails (nil once StaleAfter has passed without a success).
func (l *Learner) Refresh(ctx context.Context) (map[allocation.LearnedKey]uint32, error) {
	now := l.opts.Now()
	obs, err := l.query(ctx)
	if err != nil {
		if !l.lastOK.IsZero() && now.Sub(l.lastOK) >= l.opts.StaleAfter {
			clear(l.weights)
		}
		return l.current(), err
	}
	l.lastOK = now
	next := make(map[allocation.LearnedKey]float64, len(obs))
	for k, v := range obs {
		if old, ok := l.weights[k]; ok {
			v = math.Min(math.Max(v, old/(1+l.opts.MaxChange)), old*(1+l.opts.MaxChange))
		}
		next[k] = v
	}
	l.weights = next
	return l.current(), nil
}

// current is the weights on the 10 % scale, nil when there are none.
func (l *Learner) current() map[allocation.LearnedKey]uint32 {
	if len(l.weights) == 0 {
		return nil
	}
	out := make(map[allocation.LearnedKey]uint32, len(l.weights))
	for k, v := range l.weights {
		out[k] = quantize(v)
	}
	return out
}

// quantize puts w on a logarithmic scale of 10 % steps, at least 1.
func quantize(w float64) uint32 {
	if !(w > 1) {
		return 1
	}
	q := math.Pow(1.1, math.Round(math.Log(w)/math.Log(1.1)))
	return uint32(min(math.Round(q), math.MaxUint32))
}

// query reads one sample per (job, instance) from the API.
func (l *Learner) query(ctx context.Context) (map[allocation.LearnedKey]float64, error) {
	u := strings.TrimRight(l.opts.URL, "/") + "/api/v1/query?query=" + url.QueryEscape(l.opts.Query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.opts.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("status %d, not a query API answer: %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, errors.New("the query must return an instant vector, not a " + r.Data.ResultType)
	}
	out := make(map[allocation.LearnedKey]float64, len(r.Data.Result))
	for _, s := range r.Data.Result {
		v, ok := s.Value[1].(string)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			continue
		}
		k := allocation.LearnedKey{Job: s.Metric["job"], Instance: s.Metric["instance"]}
		if k.Job == "" || k.Instance == "" {
			continue
		}
		out[k] = max(out[k], f)
	}
	return out, nil
}

func equal(a, b map[allocation.LearnedKey]uint32) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
