package allocator

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScrapeConfigFiles is issue 11 item 9: scrape_config_files are read
// (globs relative to the config file) instead of being silently ignored,
// and a job name defined twice across them is a clear error at start.
func TestScrapeConfigFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "jobs"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jobs", "a.yml"), []byte(`
scrape_configs:
  - job_name: from-file
    static_configs: [{targets: ["f:1", "f:2"]}]
`), 0o600))
	path := filepath.Join(dir, "ta.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
listen_addr: 127.0.0.1:0
collectors: [c0]
config:
  scrape_config_files: [jobs/*.yml]
  scrape_configs:
    - job_name: inline
      static_configs: [{targets: ["i:1"]}]
`), 0o600))
	base, _ := start(t, path)
	require.Contains(t, get(t, base+"/scrape_configs"), `"from-file"`)
	require.Len(t, assigned(t, base, "from-file", "c0")["c0"], 2)

	// The same job name in a second file: refused with the name.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "jobs", "b.yml"), []byte(`
scrape_configs:
  - job_name: from-file
    static_configs: [{targets: ["g:1"]}]
`), 0o600))
	err := Run(t.Context(), Options{ConfigFile: path})
	require.ErrorContains(t, err, fmt.Sprintf("multiple scrape configs with job name %q", "from-file"))
}
