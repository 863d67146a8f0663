package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sample has discovery's filter-only benchmark of the same name (no stage
// metrics, skipped), the pipeline's passes out of order, and other lines.
const sample = `goos: linux
BenchmarkPipeline/full/targets=1000-2   459   2595097 ns/op   1335 B/target   2595 ns/target
BenchmarkPipeline/full/targets=100000-2   2   669959284 ns/op   29.95 alloc-MB/op   21.47 alloc-ms/op   21.86 filter-MB/op   180.8 filter-ms/op   93000 kept   284.2 serve-MB/op   467.7 serve-ms/op
BenchmarkPipeline/full/targets=1000-2   66   20577564 ns/op   0.3137 alloc-MB/op   0.3674 alloc-ms/op   1.579 filter-MB/op   3.742 filter-ms/op   900.0 kept   11.02 serve-MB/op   16.46 serve-ms/op
BenchmarkPipeline/update-one-job/targets=100000-2   129   9359773 ns/op   2.788 alloc-ms/op   1.397 filter-ms/op
PASS
`

func TestParse(t *testing.T) {
	t.Parallel()
	passes, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	require.Len(t, passes, 2)
	require.Equal(t, 1000, passes[0].targets)
	require.Equal(t, 100000, passes[1].targets)
	require.InDelta(t, 180.8, passes[1].metrics["filter-ms/op"], 1e-9)

	figs := figures(passes)
	total := figs[0].Series[0]
	require.Equal(t, [2]float64{100000, 180.8 + 21.47}, total.Points[1])
	perTarget := figs[1].Series[0]
	require.InDelta(t, (3.742+0.3674)*1e3/1000, perTarget.Points[0][1], 1e-9, "µs per target")

	_, err = parse(strings.NewReader("BenchmarkPipeline/full/targets=1000-2 1 5 ns/op\n"))
	require.ErrorContains(t, err, "no BenchmarkPipeline/full lines")
	_, err = parse(strings.NewReader("BenchmarkPipeline/full/targets=x-2 1 5 ns/op 1 filter-ms/op\n"))
	require.Error(t, err)
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	require.NoError(t, os.WriteFile(in, []byte(sample), 0o644))
	out := filepath.Join(dir, "plots")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-in", in, "-out", out}, &stdout, &stderr), stderr.String())
	for _, name := range []string{"pipeline-ms.png", "pipeline-ms.svg", "pipeline-per-target.png", "pipeline-per-target.svg"} {
		fi, err := os.Stat(filepath.Join(out, name))
		require.NoError(t, err)
		require.NotZero(t, fi.Size(), name)
	}
	require.Equal(t, 1, run([]string{"-in", filepath.Join(dir, "missing.txt"), "-out", out}, &stdout, &stderr))
}
