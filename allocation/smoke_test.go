package allocation

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStrategyNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "consistent-hashing", ConsistentHashing)
}
