package allocatorconfig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStaticCollectorForms(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte("collectors: [collector-0, {name: collector-1, node: n1}]\n"))
	require.NoError(t, err)
	require.Equal(t, []StaticCollector{{Name: "collector-0"}, {Name: "collector-1", Node: "n1"}}, c.Collector.Collectors)

	_, err = ParseConfig([]byte("collectors: [{name: c, nod: n1}]\n"))
	require.ErrorContains(t, err, `unknown key "nod"`, "a misspelt key is refused, not ignored")
	_, err = ParseConfig([]byte("collectors: [{node: n1}]\n"))
	require.ErrorContains(t, err, "no name")
	_, err = ParseConfig([]byte("collectors: [\"\"]\n"))
	require.ErrorContains(t, err, "no name")
}
