package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImageVersion(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]string{
		"otel/opentelemetry-collector-contrib:0.165.0":   "0.165.0",
		"ghcr.io/org/collector:v1.2.3-rc.1":              "1.2.3-rc.1",
		"registry:5000/collector:0.1.0":                  "0.1.0",
		"registry:5000/collector":                        "",
		"otel/collector:latest":                          "",
		"otel/collector@sha256:0123456789abcdef":         "",
		"otel/collector:0.165.0@sha256:0123456789abcdef": "0.165.0",
		"collector:0.165":                                "",
	} {
		require.Equal(t, want, imageVersion(image), image)
	}
}
