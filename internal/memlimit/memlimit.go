// Package memlimit sets the Go runtime's soft memory limit from the
// container's memory limit (cgroup v2 memory.max, or v1's
// memory.limit_in_bytes) when GOMEMLIMIT is not set.
//
// Without a limit the garbage collector lets the heap grow to twice the live
// heap (GOGC=100) and a pod whose live heap is over half its memory limit is
// killed; with it the collector works harder near the limit instead. The
// allocator's start-up garbage (decoding the first lists of a large cluster)
// is what makes its peak RSS several times its live heap
// (benchmarks/README.md).
package memlimit

import (
	"bufio"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the part of the container's limit given to the Go runtime:
// the rest is for what the runtime does not count (thread stacks outside
// the heap, memory not yet returned to the kernel, cgo).
const Fraction = 0.9

// FS is where cgroup files are read: the root file system.
type FS struct {
	Proc   string // /proc
	Cgroup string // /sys/fs/cgroup
}

// Host is the real file system.
var Host = FS{Proc: "/proc", Cgroup: "/sys/fs/cgroup"}

// Set sets the runtime's memory limit to Fraction of the container's memory
// limit unless GOMEMLIMIT is set (the runtime reads it itself) or there is
// no limit. It returns the limit set, 0 when none.
func Set(f FS) (int64, error) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return 0, nil
	}
	limit, err := f.Limit()
	if err != nil || limit <= 0 {
		return 0, err
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft, nil
}

// Limit returns the memory limit of this process's cgroup, the smallest of
// its own and its ancestors' (cgroup v2), 0 when unlimited or unknown.
func (f FS) Limit() (int64, error) {
	paths, err := f.cgroupPaths()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	if p, ok := paths[""]; ok { // cgroup v2: walk up to the root
		var limit int64
		for dir := filepath.Join(f.Cgroup, p); ; dir = filepath.Dir(dir) {
			if v, ok := readLimit(filepath.Join(dir, "memory.max")); ok && (limit == 0 || v < limit) {
				limit = v
			}
			if dir == f.Cgroup || !strings.HasPrefix(dir, f.Cgroup) {
				break
			}
		}
		if limit > 0 {
			return limit, nil
		}
	}
	// cgroup v1, also on hybrid hosts whose unified hierarchy has no memory
	// controller. In a container /sys/fs/cgroup/memory is its own cgroup.
	if p, ok := paths["memory"]; ok {
		for _, dir := range []string{filepath.Join(f.Cgroup, "memory", p), filepath.Join(f.Cgroup, "memory")} {
			if v, ok := readLimit(filepath.Join(dir, "memory.limit_in_bytes")); ok {
				return v, nil
			}
		}
	}
	return 0, nil
}

// cgroupPaths reads /proc/self/cgroup: the path of each controller, "" for
// cgroup v2's unified hierarchy.
func (f FS) cgroupPaths() (map[string]string, error) {
	file, err := os.Open(filepath.Join(f.Proc, "self", "cgroup"))
	if err != nil {
		return nil, err
	}
	defer file.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, sc.Err()
}

// readLimit reads a memory limit file: "max" and v1's page-rounded
// "unlimited" (close to MaxInt64) are no limit.
func readLimit(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v >= math.MaxInt64/2 {
		return 0, false
	}
	return v, true
}
