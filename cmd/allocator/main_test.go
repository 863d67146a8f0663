package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
		{"bad log level", []string{"--log-level=loud"}, 2, "--log-level"},
		{"bad log format", []string{"--log-format=xml"}, 2, "--log-format"},
		{"bad zap level", []string{"--zap-log-level=loud"}, 2, "--zap-log-level"},
		{"bad zap encoder", []string{"--zap-encoder=xml"}, 2, "--zap-encoder"},
		{"zap flags accepted", []string{"--zap-log-level=debug", "--zap-encoder=json", "--zap-stacktrace-level=error", "--zap-time-encoding=iso8601", "--config-file=" + bad}, 1, `"msg":"allocator stopped"`},
		{"missing config file", []string{"--config-file=" + filepath.Join(t.TempDir(), "none.yaml")}, 1, "none.yaml"},
		{"unknown key", []string{"--config-file=" + bad}, 1, `unknown key \"colectors\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &stderr))
			require.Contains(t, stderr.String(), tc.say)
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

func TestZapFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		set           []string
		z             zapFlags
		level, format string
	}{
		{"none", nil, zapFlags{}, "info", "text"},
		{"zap debug json", []string{"zap-log-level", "zap-encoder"}, zapFlags{level: "debug", encoder: "json"}, "debug", "json"},
		{"zap verbosity", []string{"zap-log-level"}, zapFlags{level: "3"}, "debug", "text"},
		{"zap panic", []string{"zap-log-level"}, zapFlags{level: "panic"}, "error", "text"},
		{"zap console", []string{"zap-encoder"}, zapFlags{encoder: "console"}, "info", "text"},
		{"zap devel", []string{"zap-devel"}, zapFlags{devel: true}, "debug", "text"},
		{"ours win", []string{"zap-log-level", "log-level", "zap-encoder", "log-format"}, zapFlags{level: "debug", encoder: "json"}, "warn", "text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := map[string]bool{}
			for _, s := range tc.set {
				set[s] = true
			}
			level, format := "info", "text"
			if set["log-level"] {
				level = "warn"
			}
			require.NoError(t, tc.z.apply(set, &level, &format))
			require.Equal(t, tc.level, level)
			require.Equal(t, tc.format, format)
		})
	}
}
