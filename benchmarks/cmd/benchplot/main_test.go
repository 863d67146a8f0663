package main

import (
	"bytes"
	"fmt"
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

func TestCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, targets, collectors, allocators int, complete float64) {
		results := ""
		for i := range allocators {
			if i > 0 {
				results += ","
			}
			results += fmt.Sprintf(`{"name":"a%d","targets":%d,"complete_seconds":%g,"rss_peak_mib":100,"rss_series":[{"s":0.1,"rss_mib":20},{"s":1,"rss_mib":80}]}`, i, targets/allocators, complete)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil,
			`{"targets":%d,"monitors":100,"collectors":%d,"allocators":%d,"results":[%s]}`, targets, collectors, allocators, results), 0o644))
	}
	write("b.json", 100_000, 10, 1, 4.5)
	write("a.json", 10_000, 10, 1, 1.5)
	write("c.json", 10_000, 100, 1, 1.7)
	write("d.json", 100_000, 10, 2, 2.5)
	runs, err := readCluster(dir)
	require.NoError(t, err)
	require.Len(t, runs, 4)
	figs := clusterFigures(runs)
	require.Len(t, figs, 2)
	require.Len(t, figs[0].Series, 4, "an RSS line per run")
	require.Equal(t, [][2]float64{{0.1, 20}, {1, 80}}, figs[0].Series[0].Points)
	// 10 collectors: seconds and GiB over 10k and 100k (the 2-allocator run
	// is left out); 100 collectors: 10k only; and the budget line.
	require.Len(t, figs[1].Series, 5)
	require.Equal(t, [][2]float64{{10_000, 1.5}, {100_000, 4.5}}, figs[1].Series[0].Points)

	out := filepath.Join(dir, "plots")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-cluster", dir, "-out", out}, &stdout, &stderr), stderr.String())
	for _, name := range []string{"cluster-rss.png", "cluster-complete.svg"} {
		fi, err := os.Stat(filepath.Join(out, name))
		require.NoError(t, err)
		require.NotZero(t, fi.Size(), name)
	}
	require.Equal(t, 1, run([]string{"-cluster", t.TempDir(), "-out", out}, &stdout, &stderr), "no summaries")
}
