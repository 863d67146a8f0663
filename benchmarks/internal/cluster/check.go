package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"golang.org/x/sync/errgroup"
)

// poller reads an allocator's assignment as collectors do, over HTTP.
type poller struct {
	base    string
	client  *http.Client
	workers int
}

// errNotReady is an answer that is not (yet) the assignment: a 503 before
// the first scrape-config set, say.
var errNotReady = errors.New("not ready")

func (p *poller) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d: %w", path, resp.StatusCode, errNotReady)
	}
	return b, nil
}

// jobs returns the job names of /jobs.
func (p *poller) jobs(ctx context.Context) (map[string]bool, error) {
	b, err := p.get(ctx, "/jobs")
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode /jobs: %w", err)
	}
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out, nil
}

// targets returns the addresses served to collector for job.
func (p *poller) targets(ctx context.Context, job, collector string) ([]string, error) {
	b, err := p.get(ctx, "/jobs/"+url.QueryEscape(job)+"/targets?collector_id="+url.QueryEscape(collector))
	if err != nil {
		return nil, err
	}
	return addresses(b)
}

var targetsKey = []byte(`"targets":[`)

// addresses returns the addresses of an http_sd response,
// [{"targets":["a:1"],"labels":{...}},...], without decoding the labels: at
// 100k targets the responses are hundreds of megabytes, and decoding them
// would take the CPU the allocator is measured on. The key cannot occur
// inside a JSON string (its quotes would be escaped there).
func addresses(b []byte) ([]string, error) {
	if t := bytes.TrimSpace(b); len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return nil, fmt.Errorf("not a JSON array: %.40q", b)
	}
	var out []string
	for {
		i := bytes.Index(b, targetsKey)
		if i < 0 {
			break
		}
		b = b[i+len(targetsKey):]
		for {
			if len(b) == 0 {
				return nil, errors.New("truncated targets list")
			}
			switch b[0] {
			case ']':
				b = b[1:]
			case ',':
				b = b[1:]
				continue
			case '"':
				end := bytes.IndexByte(b[1:], '"')
				if end < 0 {
					return nil, errors.New("unterminated address")
				}
				out = append(out, string(b[1:1+end]))
				b = b[end+2:]
				continue
			default:
				return nil, fmt.Errorf("unexpected %q in targets list", b[0])
			}
			break
		}
	}
	return out, nil
}

// Check is one round over every (job, collector) of an allocator.
type Check struct {
	// Missing, Doubled and Unexpected count kept targets served to no
	// collector, to more than one, and addresses served that are not kept
	// targets; MissingJobs are jobs /jobs does not list.
	Missing, Doubled, Unexpected, MissingJobs int
	// Examples are a few of the problems, for the log.
	Examples []string
}

// OK reports whether every kept target was served exactly once and nothing
// else was served.
func (c Check) OK() bool {
	return c.Missing == 0 && c.Doubled == 0 && c.Unexpected == 0 && c.MissingJobs == 0
}

func (c Check) String() string {
	return fmt.Sprintf("%d jobs missing, %d targets missing, %d doubled, %d unexpected %v", c.MissingJobs, c.Missing, c.Doubled, c.Unexpected, c.Examples)
}

// check requests /jobs and every (job, collector) once and compares what is
// served with want (job → kept addresses).
func (p *poller) check(ctx context.Context, want map[string]map[string]bool, collectors []string) (Check, error) {
	var c Check
	have, err := p.jobs(ctx)
	if err != nil {
		return c, err
	}
	present := make(map[string]map[string]bool, len(want))
	for j, addrs := range want {
		if !have[j] {
			c.MissingJobs++
			c.Examples = appendExample(c.Examples, "job "+j+" not in /jobs")
			continue
		}
		present[j] = addrs
	}
	r, err := p.checkJobs(ctx, present, collectors)
	r.MissingJobs = c.MissingJobs
	r.Examples = append(c.Examples, r.Examples...)
	return r, err
}

// checkJobs requests every (job, collector) of want once and compares what
// is served with it.
func (p *poller) checkJobs(ctx context.Context, want map[string]map[string]bool, collectors []string) (Check, error) {
	var c Check
	var mu sync.Mutex // guards c
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	for j := range want {
		g.Go(func() error {
			served := make(map[string]int, len(want[j]))
			for _, col := range collectors {
				addrs, err := p.targets(gctx, j, col)
				if err != nil {
					return err
				}
				for _, a := range addrs {
					served[a]++
				}
			}
			var r Check
			for a := range want[j] {
				switch n := served[a]; {
				case n == 0:
					r.Missing++
					r.Examples = appendExample(r.Examples, j+": "+a+" missing")
				case n > 1:
					r.Doubled++
					r.Examples = appendExample(r.Examples, fmt.Sprintf("%s: %s served %d times", j, a, n))
				}
			}
			for a := range served {
				if !want[j][a] {
					r.Unexpected++
					r.Examples = appendExample(r.Examples, j+": "+a+" not a kept target")
				}
			}
			mu.Lock()
			c.Missing += r.Missing
			c.Doubled += r.Doubled
			c.Unexpected += r.Unexpected
			for _, e := range r.Examples {
				c.Examples = appendExample(c.Examples, e)
			}
			mu.Unlock()
			return nil
		})
	}
	return c, g.Wait()
}

func appendExample(ex []string, s string) []string {
	if len(ex) < 3 {
		return append(ex, s)
	}
	return ex
}
