package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeFS builds a /proc/self/cgroup and cgroup files under a temporary root.
func fakeFS(t *testing.T, procCgroup string, files map[string]string) FS {
	t.Helper()
	root := t.TempDir()
	f := FS{Proc: filepath.Join(root, "proc"), Cgroup: filepath.Join(root, "cgroup")}
	write := func(path, content string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	}
	write(filepath.Join(f.Proc, "self", "cgroup"), procCgroup)
	for p, c := range files {
		write(filepath.Join(f.Cgroup, p), c)
	}
	return f
}

func TestLimit(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		proc  string
		files map[string]string
		want  int64
	}{
		"v2 own limit": {"0::/kubepods/pod1/c1\n", map[string]string{"kubepods/pod1/c1/memory.max": "536870912\n"}, 512 << 20},
		"v2 smaller ancestor": {"0::/kubepods/pod1/c1\n", map[string]string{
			"kubepods/pod1/c1/memory.max": "max\n", "kubepods/pod1/memory.max": "268435456\n", "kubepods/memory.max": "1073741824\n"}, 256 << 20},
		"v2 unlimited": {"0::/a\n", map[string]string{"a/memory.max": "max\n"}, 0},
		"v2 no files":  {"0::/\n", nil, 0},
		"v1 in a container": {"4:memory:/kubepods/pod1/c1\n2:cpu,cpuacct:/kubepods/pod1/c1\n", map[string]string{
			"memory/memory.limit_in_bytes": "134217728\n"}, 128 << 20},
		"v1 unlimited": {"4:memory:/x\n", map[string]string{"memory/x/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		"hybrid: unified without memory, v1 limit": {"9:name=systemd:/\n4:memory:/job\n0::/\n", map[string]string{
			"memory/job/memory.limit_in_bytes": "2147483648\n"}, 2 << 30},
		"garbage": {"0::/a\n", map[string]string{"a/memory.max": "lots\n"}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := fakeFS(t, tc.proc, tc.files).Limit()
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	got, err := FS{Proc: t.TempDir(), Cgroup: t.TempDir()}.Limit()
	require.NoError(t, err, "no /proc/self/cgroup: no limit, no error")
	require.Zero(t, got)
}

// TestSet is not parallel: it sets the process's memory limit and GOMEMLIMIT.
func TestSet(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	f := fakeFS(t, "0::/c\n", map[string]string{"c/memory.max": "1000000000\n"})
	got, err := Set(f)
	require.NoError(t, err)
	require.Equal(t, int64(900_000_000), got)
	require.Equal(t, int64(900_000_000), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "off")
	got, err = Set(f)
	require.NoError(t, err)
	require.Zero(t, got, "GOMEMLIMIT set: the runtime's own setting stays")
	require.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
