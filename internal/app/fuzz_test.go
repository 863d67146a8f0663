package app

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// FuzzParseConfig feeds arbitrary documents to the allocator's config
// parser: it returns a config or an error, never panics, and gives the same
// answer twice (a reload of an unchanged file must not flip).
func FuzzParseConfig(f *testing.F) {
	example, err := os.ReadFile("../../examples/allocator.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example))
	for _, seed := range []string{
		"",
		"collectors: [a, b]\nconfig:\n  scrape_configs:\n  - job_name: x\n    static_configs:\n    - targets: [h:1]\n",
		"allocation_strategy: per-node\nfilter_strategy: nope\n",
		"balance_epsilon: -1\n",
		"prometheus_cr:\n  enabled: true\n  service_monitor_selector: {matchLabels: {a: b}}\n",
		"https:\n  enabled: true\n",
		"config:\n  scrape_configs:\n  - job_name: x\n    relabel_configs:\n    - {regex: '(', action: keep}\n",
		"unknown: 1\n",
		"collectors: {a: 1}\n",
		"[1, 2]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				panic(fmt.Sprintf("parseConfig hangs on %q", doc))
			}
		}()
		defer close(done)
		c1, err1 := parseConfig([]byte(doc))
		c2, err2 := parseConfig([]byte(doc))
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("parsed twice: %v, then %v", err1, err2)
		}
		if err1 != nil {
			if err1.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if c1.ListenAddr == "" || c1.AllocationStrategy == "" || c2.Discovery == nil {
			t.Fatalf("defaults not applied: %+v", c1)
		}
	})
}
