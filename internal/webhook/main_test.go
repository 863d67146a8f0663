package webhook

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.MainWith(m, &env, testenv.Options{
		CRDDirs:      []string{filepath.Join(testenv.Root(), "config", "crd", "bases")},
		WebhookPaths: []string{filepath.Join(testenv.Root(), "config", "webhook", "manifests.yaml")},
		// The collector CRD's conversion webhook calls the test's server.
		Scheme:     testScheme(nil),
		CheckLeaks: true,
		IgnoreLeaks: []goleak.Option{
			goleak.IgnoreAnyFunction("k8s.io/client-go/tools/events.(*eventBroadcasterImpl).StartRecordingToSink.func1"),
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*Broadcaster).blockQueue"),
			goleak.IgnoreAnyFunction("k8s.io/client-go/tools/events.(*eventBroadcasterImpl).StartEventWatcher.func1"),
			// The events broadcaster's filtered watch outlives a stopped
			// manager until its last event is drained.
			goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop"),
		},
	}))
}
