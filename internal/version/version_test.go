package version

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

func TestImage(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ghcr.io/shardwise/allocator:"+Version, Image("allocator"))
	require.Regexp(t, `^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`, Version, "Version must be a semantic version with a v")
}

// TestChartAppVersion keeps the chart's appVersion, the default tag of the
// images the chart installs, in step with Version.
func TestChartAppVersion(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "shardwise", "Chart.yaml"))
	require.NoError(t, err)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal(b, &chart))
	require.Equal(t, Version, chart.AppVersion, "charts/shardwise/Chart.yaml appVersion")
}

// TestKustomizeImages keeps the kustomize base's images at the release.
func TestKustomizeImages(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(b), "image: "+Image("operator"))
	require.Contains(t, string(b), "--target-allocator-image="+Image("allocator"))
	require.NotContains(t, string(b), ":latest")
}

// TestMakefileReadsVersion checks that the line the Makefile's VERSION
// default is read from (awk on `var Version = "..."`) is still here.
func TestMakefileReadsVersion(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("version.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^var Version = "([^"]+)"$`).FindSubmatch(src)
	require.NotNil(t, m, "version.go must keep the line var Version = \"...\"")
	require.Equal(t, Version, string(m[1]))
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	require.Contains(t, string(mk), `/^var Version = /`, "the Makefile reads VERSION from version.go")
}
