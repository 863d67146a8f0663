package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	t.Parallel()
	collector, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "opentelemetry.io_opentelemetrycollectors.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout string // a substring of the output
		stderr string
	}{
		{name: "the collector CRD", stdin: string(collector), stdout: "description: config is the collector configuration"},
		{name: "a foreign CRD", stdin: strings.ReplaceAll(string(collector), "opentelemetry.io", "example.com"), code: 1,
			stderr: "crdslim: example.com/v1alpha1, Kind=OpenTelemetryCollector: no Go type for this kind"},
		{name: "an argument", args: []string{"crd.yaml"}, code: 2, stderr: "usage: crdslim <crd.yaml >slim.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, strings.NewReader(tc.stdin), &stdout, &stderr), stderr.String())
			require.Contains(t, stdout.String(), tc.stdout)
			require.NotContains(t, stdout.String(), "More info:", "no Kubernetes reference text")
			require.Contains(t, stderr.String(), tc.stderr)
		})
	}
}
