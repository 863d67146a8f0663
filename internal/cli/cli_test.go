package cli

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/version"
)

func TestStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		parseErr     error
		printVersion bool
		opts         log.Options
		code         int
		done         bool
		stdout       string
		stderr       string
	}{
		{name: "help", parseErr: flag.ErrHelp, code: 0, done: true},
		{name: "bad flag", parseErr: errors.New("--x must be positive"), code: 2, done: true, stderr: "tool: --x must be positive\n"},
		{name: "version", printVersion: true, code: 0, done: true, stdout: "tool " + version.Version + " (revision "},
		{name: "bad log format", opts: log.Options{Format: "xml"}, code: 2, done: true, stderr: "tool: "},
		{name: "run", opts: log.Options{Format: log.FormatJSON}, code: 0, done: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			logger, code, done := Start("tool", tc.parseErr, tc.printVersion, &tc.opts, &stdout, &stderr)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.done, done)
			require.Equal(t, !done, logger != nil)
			require.Contains(t, stdout.String(), tc.stdout)
			require.Contains(t, stderr.String(), tc.stderr)
			if !done {
				logger.Info("hello")
				require.Contains(t, stderr.String(), `"msg":"hello"`)
			}
		})
	}
}
