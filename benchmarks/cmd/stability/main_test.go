package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJSONFields pins the field names other tools read.
func TestJSONFields(t *testing.T) {
	t.Parallel()
	var out, errs bytes.Buffer
	code := run([]string{"-targets", "600", "-collectors", "3,5", "-strategy", "consistent-hashing", "-json"}, &out, &errs)
	require.Zero(t, code, errs.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	want := []string{"n", "targets", "balance", "balance_after_join", "moved_join", "min_join", "moved_leave", "min_leave", "moved_churn", "churn_min", "restart_moved", "restart_moved_grace", "assign_ms", "join_ms"}
	slices.Sort(want)
	for i, line := range lines {
		var row map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &row))
		var got []string
		for k := range row {
			got = append(got, k)
		}
		slices.Sort(got)
		require.Equal(t, want, got)
		require.EqualValues(t, []int{3, 5}[i], row["n"])
		require.EqualValues(t, 600, row["targets"])
		// Issue 11 item 8: every intermediate move counts, and within the
		// grace period a rolling restart moves nothing.
		require.Positive(t, row["restart_moved"])
		require.EqualValues(t, 0, row["restart_moved_grace"])
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"table", []string{"-targets", "300", "-collectors", "3", "-strategy", "all"}, 0, "otel-consistent-hashing"},
		{"scenario", []string{"-targets", "300", "-n", "3", "-scenario", "restart"}, 0, "hashmod"},
		{"scenario json", []string{"-targets", "300", "-n", "3", "-scenario", "job", "-strategy", "hashmod", "-json"}, 0, `"kind":"add-job"`},
		{"unknown strategy", []string{"-strategy", "nope"}, 1, ""},
		{"unknown scenario", []string{"-scenario", "nope"}, 1, ""},
		{"json with many strategies", []string{"-targets", "300", "-strategy", "all", "-json"}, 1, ""},
		{"bad collectors", []string{"-collectors", "3,x"}, 1, ""},
		{"epsilon list", []string{"-targets", "300", "-collectors", "3", "-epsilon", "0.05,0.2"}, 0, "consistent-hashing ε=0.2"},
		{"json with many epsilons", []string{"-targets", "300", "-epsilon", "0.05,0.2", "-json"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errs bytes.Buffer
			require.Equal(t, tc.code, run(tc.args, &out, &errs), errs.String())
			require.Contains(t, out.String(), tc.want)
		})
	}
}

func TestReportFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errs bytes.Buffer
	code := run([]string{"-targets", "400", "-collectors", "3", "-n", "3", "-scenario", "restart", "-sweep", "0.1", "-report", dir}, &out, &errs)
	require.Zero(t, code, errs.String())
	for _, f := range []string{"index.html", "report.json", "restart-balance.png", "restart-balance.svg"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
}
