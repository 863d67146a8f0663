package allocator

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
)

// FuzzParseConfig feeds arbitrary documents to the allocator's config
// parser: it returns a config or an error and never panics; it is
// deterministic (a reload of an unchanged file gives an equal config or the
// same error, so it must not flip); and a parsed document re-encoded as YAML
// (another key order, quoting, flow style, anchors expanded) parses to an
// equal config, so the meaning depends on the content only.
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
		if err1 != nil {
			require.NotEmpty(t, err1.Error(), "empty error message")
			require.EqualError(t, err2, err1.Error(), "parsed twice")
			return
		}
		require.NoError(t, err2, "parsed twice")
		require.Equal(t, c1, c2, "parsed twice")
		require.NotEmpty(t, c1.ListenAddr, "defaults not applied")
		require.NotEmpty(t, c1.AllocationStrategy, "defaults not applied")
		require.NotNil(t, c1.Discovery)

		var tree yaml.MapSlice
		require.NoError(t, yaml.Unmarshal([]byte(doc), &tree))
		again, err := yaml.Marshal(tree)
		require.NoError(t, err)
		c3, err := parseConfig(again)
		require.NoError(t, err, "re-encoded:\n%s", again)
		require.Equal(t, c1, c3, "re-encoded:\n%s", again)
	})
}
