package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/version"
)

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("colectors: [a]\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"unknown flag", []string{"--nope"}, 2, "flag provided but not defined"},
		{"help", []string{"--help"}, 0, "-config-file"},
		{"version", []string{"--version"}, 0, "allocator " + version.Version + " (revision "},
		{"bad log level", []string{"--log-level=loud"}, 2, "-log-level"},
		{"bad log format", []string{"--log-format=xml"}, 2, "-log-format"},
		{"bad zap level", []string{"--zap-log-level=loud"}, 2, "-zap-log-level"},
		{"bad zap encoder", []string{"--zap-encoder=xml"}, 2, "-zap-encoder"},
		{"zap flags accepted", []string{"--zap-log-level=debug", "--zap-encoder=json", "--zap-stacktrace-level=error", "--zap-time-encoding=iso8601", "--config-file=" + bad}, 1, `"msg":"allocator stopped"`},
		{"missing config file", []string{"--config-file=" + filepath.Join(t.TempDir(), "none.yaml")}, 1, "none.yaml"},
		{"unknown key", []string{"--config-file=" + bad}, 1, `unknown key \"colectors\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &stdout, &stderr))
			require.Contains(t, stdout.String()+stderr.String(), tc.say)
		})
	}
}

func TestStatusURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"[::]:8080":      "http://localhost:8080/",
		"0.0.0.0:80":     "http://localhost:80/",
		"[::1]:9":        "http://[::1]:9/",
	} {
		require.Equal(t, want, statusURL(addr), addr)
	}
}
