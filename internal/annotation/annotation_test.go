package annotation

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEffective(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ns, pod, want string }{
		{"", "", ""},
		{"", "mine", "mine"},
		{"theirs", "", "theirs"},
		{"theirs", "mine", "mine"},
		{"theirs", "false", "false"},
		{"theirs", "true", "theirs"},
		{"theirs", "TRUE", "theirs"},
		{"false", "true", "true"},
		{"FALSE", "true", "true"},
	} {
		require.Equal(t, tc.want, Effective(tc.ns, tc.pod), "namespace %q, pod %q", tc.ns, tc.pod)
	}
}
