package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const chartDir = "../../charts/shardwise"

// TestREADMEUpToDate fails when charts/shardwise/README.md is not what
// values.yaml and Chart.yaml generate.
func TestREADMEUpToDate(t *testing.T) {
	t.Parallel()
	want, err := renderDir(chartDir)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "charts/shardwise/README.md is out of date: run make chart-readme")
}

func TestDocument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values string
		want   Values
		err    string
	}{
		{
			name: "scalars and the file's comment",
			values: `# The values.

# a is a string.
a: x
b: 1 # b is an int.
# c is a bool.
c: true
# d is a list.
d: [1, "two"]
`,
			want: Values{Intro: "The values.", Rows: []Row{
				{Key: "a", Type: "string", Default: `"x"`, Description: "a is a string."},
				{Key: "b", Type: "int", Default: "1", Description: "b is an int."},
				{Key: "c", Type: "bool", Default: "true", Description: "c is a bool."},
				{Key: "d", Type: "list", Default: `[1,"two"]`, Description: "d is a list."},
			}},
		},
		{
			name: "a map without comments inside is one row",
			values: `# r are the resources,
# in two lines.
r:
  limits:
    memory: 1Gi
  requests: {cpu: 1}
`,
			want: Values{Rows: []Row{
				{Key: "r", Type: "object", Default: `{"limits":{"memory":"1Gi"},"requests":{"cpu":1}}`, Description: "r are the resources, in two lines."},
			}},
		},
		{
			name: "a map with comments inside has a row per key, and its own when commented",
			values: `m:
  n:
    # x is deep.
    x: ""
# o is documented.
o:
  # y too.
  y: 2
`,
			want: Values{Rows: []Row{
				{Key: "m.n.x", Type: "string", Default: `""`, Description: "x is deep."},
				{Key: "o", Type: "object", Description: "o is documented."},
				{Key: "o.y", Type: "int", Default: "2", Description: "y too."},
			}},
		},
		{
			name: "items, escaping",
			values: `# mode is one of:
#   a: the first, with a
#     long line.
#   b: <b> | c.
mode: "a|b"
`,
			want: Values{Rows: []Row{
				{Key: "mode", Type: "string", Default: `"a\|b"`, Description: `mode is one of:<br>a: the first, with a long line.<br>b: &lt;b&gt; \| c.`},
			}},
		},
		{
			name: "every key without a comment is named",
			values: `# a is fine.
a: 1
b: 2
m:
  # x is fine.
  x: 1
  y: {}
`,
			err: "values.yaml: no comment above b, m.y",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := document([]byte(tc.values))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
