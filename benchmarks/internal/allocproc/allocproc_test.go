package allocproc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// script writes an executable shell script standing in for the allocator
// binary; it is called with --config-file <cfg>.
func script(t *testing.T, body string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "allocator")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"+body), 0o700))
	return bin
}

// TestProcess runs shell scripts standing in for the allocator: one that
// logs its status page and exits on SIGTERM, one that fails at start and one
// that never listens.
func TestProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		body    string
		env     []string
		url     string // the base URL BaseURL returns, empty for an error
		err     string
		code    int
		logged  string
		timeout time.Duration
	}{
		{
			name: "listens then stops on SIGTERM",
			body: `trap 'echo bye >&2; exit 0' TERM
echo "starting with $2, GOGC=$GOGC" >&2
echo 'level=INFO msg="status page at http://127.0.0.1:4321/"' >&2
while :; do sleep 0.05; done
`,
			env:    []string{"GOGC=50"},
			url:    "http://127.0.0.1:4321",
			logged: "GOGC=50",
		},
		{
			name:   "exits before listening",
			body:   "echo broken config >&2; exit 3\n",
			err:    "allocator exited with code 3 before listening",
			code:   3,
			logged: "broken config",
		},
		{
			name:    "never listens",
			body:    "trap 'exit 0' TERM\nwhile :; do sleep 0.05; done\n",
			err:     "allocator did not report its address: context deadline exceeded",
			timeout: 100 * time.Millisecond,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logPath := filepath.Join(t.TempDir(), "allocator.log")
			log, err := os.Create(logPath) // a file, as the benchmarks pass
			require.NoError(t, err)
			t.Cleanup(func() { log.Close() })
			p, err := Start(script(t, tc.body), "allocator.yaml", tc.env, log)
			require.NoError(t, err)
			require.Positive(t, p.PID())
			ctx := t.Context()
			if tc.timeout > 0 {
				c, cancel := context.WithTimeout(ctx, tc.timeout)
				defer cancel()
				ctx = c
			}
			url, err := p.BaseURL(ctx)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.url, url)
			}
			require.Equal(t, tc.code, p.Stop())
			require.Equal(t, tc.code, p.Stop(), "a second Stop returns the same code")
			<-p.Exited()
			require.Equal(t, tc.code, p.ExitCode())
			// The last lines can reach the log just after the exit.
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(logPath)
				return err == nil && strings.Contains(string(b), tc.logged)
			}, 10*time.Second, 10*time.Millisecond)
		})
	}
}
