package discovery

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

// TestMain starts one control plane for every envtest test of this package
// and checks for leaked goroutines after the tests.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	code := testenv.Main(m, &env, testenv.MonitoringCRDs())
	if code == 0 {
		if err := goleak.Find(testenv.LeakIgnores()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
