// Package procfs reads a process's memory and CPU figures from Linux's
// /proc, for the benchmarks that measure the allocator as a whole process.
package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mem is what Status reads from /proc/<pid>/status, in bytes.
type Mem struct {
	RSS uint64 // VmRSS: resident now
	HWM uint64 // VmHWM: the resident peak
}

// Status reads the resident set size and its peak of pid.
func Status(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	var st Mem
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			st.RSS = v << 10
		case "VmHWM":
			st.HWM = v << 10
		}
	}
	if st.HWM == 0 {
		return st, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
	}
	return st, nil
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100

// CPUSeconds returns the user+system CPU time of pid from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc/<pid>/stat: %w", err)
	}
	return float64(u+s) / clockTicks, nil
}
