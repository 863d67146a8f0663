// Package clientgo holds process-wide client-go settings the shardwise
// programs share.
package clientgo

import (
	"os"
	"sync"

	clientfeatures "k8s.io/client-go/features"
)

// watchListEnv is the variable with which client-go lets a user choose
// streaming lists; when it is set, DisableWatchList leaves the choice alone.
const watchListEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// DisableWatchList turns client-go's WatchListClient feature (streaming
// lists, on by default since 1.35) off for every informer of the process,
// unless KUBE_FEATURE_WatchListClient says otherwise.
//
// Why: while the API server refuses connections, a reflector on the
// streaming path sleeps its retry backoff (up to 30 s, twice that with
// jitter) without watching its stop channel (client-go v0.37
// tools/cache/reflector.go, watchList), so informers, and with them the
// program, took up to a minute to stop, past a pod's termination grace
// period. The list-then-watch path it falls back to is what client-go used
// before 1.35, backs off the same way and stops at once.
var DisableWatchList = sync.OnceFunc(func() {
	if _, set := os.LookupEnv(watchListEnv); set {
		return
	}
	clientfeatures.ReplaceFeatureGates(withoutWatchList{clientfeatures.FeatureGates()})
})

// withoutWatchList reports WatchListClient off and asks base for the rest.
type withoutWatchList struct{ base clientfeatures.Gates }

func (g withoutWatchList) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return false
	}
	return g.base.Enabled(f)
}
