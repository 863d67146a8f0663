package version

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestBuildString(t *testing.T) {
	t.Parallel()
	b := Build{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.0"}
	require.Equal(t, "operator v1.2.3 (revision abc, go1.26.0)", b.String("operator"))

	cur := Current()
	require.Equal(t, Version, cur.Version)
	require.Equal(t, runtime.Version(), cur.GoVersion)
	require.NotEmpty(t, cur.Revision)
}

// TestRevisionFromLinker: without a VCS stamp (go test records none), the
// revision make build passes to the linker is the one reported. Not
// parallel: it sets a package variable.
func TestRevisionFromLinker(t *testing.T) {
	saved := Revision
	t.Cleanup(func() { Revision = saved })
	Revision = "0123abc"
	require.Equal(t, "0123abc", Current().Revision)
	Revision = ""
	require.Equal(t, "unknown", Current().Revision)
}

func TestBuildInfoMetric(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector("allocator"))
	b := Current()
	want := `
# HELP shardwise_build_info A metric with a constant 1 value labelled by the binary, its release version, source revision and Go version.
# TYPE shardwise_build_info gauge
shardwise_build_info{binary="allocator",goversion="` + b.GoVersion + `",revision="` + b.Revision + `",version="` + b.Version + `"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "shardwise_build_info"))
}
