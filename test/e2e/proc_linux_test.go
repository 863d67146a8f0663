package e2e

import "syscall"

// childProcAttr makes the kernel kill the allocator if the test binary dies
// without running its cleanups (a panic on timeout, a SIGKILL).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
