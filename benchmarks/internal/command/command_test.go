package command

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		ok     bool
		stderr string
	}{
		{name: "flags", args: []string{"-n", "3"}, code: 0, ok: true},
		{name: "help", args: []string{"-h"}, code: 0, ok: false, stderr: "Usage of tool:"},
		{name: "unknown flag", args: []string{"-nope"}, code: 2, ok: false, stderr: "flag provided but not defined: -nope"},
		{name: "bad value", args: []string{"-n", "x"}, code: 2, ok: false, stderr: `invalid value "x" for flag -n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			fs := FlagSet("tool", &stderr)
			n := fs.Int("n", 1, "a number")
			code, ok := Parse(fs, tc.args)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.ok, ok)
			require.Contains(t, stderr.String(), tc.stderr)
			if ok {
				require.Equal(t, 3, *n)
			}
		})
	}
}
