package parallel

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEach(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 7, 1000} {
		calls := make([]atomic.Int32, n)
		workers := Workers(n)
		Each(n, func(g, i int) {
			require.GreaterOrEqual(t, g, 0)
			require.Less(t, g, max(workers, 1))
			calls[i].Add(1)
		})
		for i := range calls {
			require.Equal(t, int32(1), calls[i].Load(), "n=%d: piece %d", n, i)
		}
	}
}
