package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestProvidersWithNothingReportPromptly: a kubernetes_sd job whose
// namespace has no objects and a file_sd job whose glob matches no file
// report "no targets" once their initial sync is done (the marker of the
// patched Prometheus copy), so the first Update does not wait for
// FirstSyncTimeout (an hour here) and neither job is pending.
func TestProvidersWithNothingReportPromptly(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	dir := t.TempDir()
	kubeconfig := testenv.WriteKubeconfig(t, cfg)
	pc, err := allocatorconfig.LoadPromConfig(fmt.Appendf(nil, `
scrape_configs:
- job_name: empty-k8s
  kubernetes_sd_configs:
  - role: endpointslice
    kubeconfig_file: %s
    namespaces: {names: [no-such-namespace]}
- job_name: empty-file
  file_sd_configs:
  - files: [%s]
- job_name: static
  static_configs: [{targets: ["s:1"]}]
`, kubeconfig, filepath.Join(dir, "none-*.json")))
	require.NoError(t, err)
	m, _ := startManager(t, ManagerOptions{FirstSyncTimeout: 1 << 62})
	require.NoError(t, m.ApplyConfig(pc))
	first := recvUpdate(t, m.Updates())
	require.Len(t, first.ScrapeConfigs, 3)
	require.Empty(t, first.Pending, "every provider reported")
	require.Empty(t, first.Targets["empty-k8s"])
	require.Empty(t, first.Targets["empty-file"])
	require.Len(t, first.Targets["static"], 1)

	// A file appearing later is picked up as usual.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "none-1.json"), []byte(`[{"targets":["f:1"]}]`), 0o600))
	state := map[string][]string{}
	recvUntil(t, m.Updates(), state, func(s map[string][]string) bool { return len(s["empty-file"]) == 1 })
}

// TestJobsShareProviders: jobs with equal service discovery configs (at the
// same index) share one Prometheus provider, so 100 ServiceMonitors of one
// namespace run one set of Kubernetes informers, not 100; each job still
// gets its targets and none waits.
func TestJobsShareProviders(t *testing.T) {
	t.Parallel()
	pc, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: a
  static_configs: [{targets: ["x:1"]}]
- job_name: b
  static_configs: [{targets: ["x:1"]}]
- job_name: c
  static_configs: [{targets: ["y:1"]}]
`))
	require.NoError(t, err)
	m, _ := startManager(t, ManagerOptions{FirstSyncTimeout: 1 << 62})
	require.NoError(t, m.ApplyConfig(pc))
	first := recvUpdate(t, m.Updates())
	require.Empty(t, first.Pending)
	for _, job := range []string{"a", "b", "c"} {
		require.Len(t, first.Targets[job], 1, job)
	}
	require.Len(t, m.sd.Providers(), 2, "a and b share a provider")
}

func TestFailedProviders(t *testing.T) {
	t.Parallel()
	var f failedProviders
	pc, err := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: a
  static_configs: [{targets: ["x:1"]}]
- job_name: b
  static_configs: [{targets: ["x:1"]}]
`))
	require.NoError(t, err)
	a, b := pc.ScrapeConfigs[0].ServiceDiscoveryConfigs[0], pc.ScrapeConfigs[1].ServiceDiscoveryConfigs[0]
	f.set(a, 0, true)
	require.True(t, f.has(b, 0), "an equal config failed")
	require.False(t, f.has(b, 1), "at another index")
	f.set(b, 0, false)
	require.False(t, f.has(a, 0))
}
