package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlags: bad sizes are refused before anything starts (the run itself
// is covered by internal/cluster's TestRun).
func TestFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-targets", "0"},
		{"-collectors", "-1"},
		{"-allocators", "0"},
		{"-idle", "0s"},
		{"-no-such-flag"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(args, &stdout, &stderr), "%v", args)
		require.Empty(t, stdout.String())
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &stdout, &stderr))
	require.Contains(t, stderr.String(), "-rollout-pods")
}
