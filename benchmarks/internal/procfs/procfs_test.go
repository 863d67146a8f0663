package procfs

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSelf(t *testing.T) {
	st, err := Status(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, st.RSS)
	require.GreaterOrEqual(t, st.HWM, st.RSS)
	cpu, err := CPUSeconds(os.Getpid())
	require.NoError(t, err)
	require.GreaterOrEqual(t, cpu, 0.0)
	_, err = Status(-1)
	require.Error(t, err)
}
