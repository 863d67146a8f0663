package webhook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	code := testenv.MainWith(m, &env, testenv.Options{
		CRDDirs:      []string{filepath.Join(testenv.Root(), "config", "crd", "bases")},
		WebhookPaths: []string{filepath.Join(testenv.Root(), "config", "webhook", "manifests.yaml")},
		// The collector CRD's conversion webhook calls the test's server.
		Scheme: testScheme(nil),
	})
	if code == 0 {
		if err := goleak.Find(append(testenv.LeakIgnores(),
			goleak.IgnoreAnyFunction("k8s.io/client-go/tools/events.(*eventBroadcasterImpl).StartRecordingToSink.func1"),
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*Broadcaster).blockQueue"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/tools/events.(*eventBroadcasterImpl).StartEventWatcher.func1"),
			// The events broadcaster's filtered watch outlives a stopped
			// manager until its last event is drained.
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
		)...); err != nil {
			_, _ = os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
