package allocproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Process is a running allocator binary.
type Process struct {
	cmd  *exec.Cmd
	addr chan string // the base URL, sent once
	// exited is closed when the process has exited; exitCode is set before.
	exited   chan struct{}
	exitCode int
	once     sync.Once
}

// statusRE matches the allocator's log line that names its status page.
var statusRE = regexp.MustCompile(`status page at (http://[^ "/]+)/`)

// Start runs bin on the config file cfg, with env (KEY=VALUE) added to this
// process's environment. Its stdout and stderr go to log; the address it
// listens on is read from its stderr. Stop ends it.
func Start(bin, cfg string, env []string, log io.Writer) (*Process, error) {
	cmd := exec.Command(bin, "--config-file", cfg) //nolint:noctx // stopped with SIGTERM by Stop, to measure a graceful exit
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = log
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start allocator: %w", err)
	}
	p := &Process{cmd: cmd, addr: make(chan string, 1), exited: make(chan struct{})}
	go p.copyLog(pr, log)
	go func() {
		err := cmd.Wait()
		p.exitCode = cmd.ProcessState.ExitCode()
		if err != nil && p.exitCode == 0 {
			p.exitCode = -1
		}
		pw.Close()
		close(p.exited)
	}()
	return p, nil
}

// copyLog copies the allocator's stderr to log line by line and sends the
// first status-page address it names.
func (p *Process) copyLog(stderr io.Reader, log io.Writer) {
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if m := statusRE.FindStringSubmatch(line); m != nil && !sent {
			p.addr <- m[1]
			sent = true
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
}

// PID is the allocator's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed once the allocator has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitCode is the allocator's exit code (-1 when it was killed by a
// signal), valid once Exited is closed.
func (p *Process) ExitCode() int { return p.exitCode }

// BaseURL returns the allocator's base URL once it listens, or an error when
// it exits first or ctx ends.
func (p *Process) BaseURL(ctx context.Context) (string, error) {
	select {
	case addr := <-p.addr:
		return addr, nil
	case <-p.exited:
		return "", fmt.Errorf("allocator exited with code %d before listening (see its log)", p.exitCode)
	case <-ctx.Done():
		return "", fmt.Errorf("allocator did not report its address: %w", ctx.Err())
	}
}

// Stop sends SIGTERM, waits up to 20 s, then kills; it returns the exit
// code. Calls after the first only return the exit code.
func (p *Process) Stop() int {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p.exitCode
}
