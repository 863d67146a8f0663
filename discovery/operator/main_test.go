package operator

import (
	"os"
	"testing"

	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

// TestMain starts one control plane for the envtest tests of this package
// and checks for leaked goroutines after the tests.
func TestMain(m *testing.M) { os.Exit(testenv.MainLeakChecked(m, &env, testenv.MonitoringCRDs())) }
