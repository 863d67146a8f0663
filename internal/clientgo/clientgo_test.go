package clientgo

import (
	"testing"

	"github.com/stretchr/testify/require"
	clientfeatures "k8s.io/client-go/features"
)

type allOn struct{}

func (allOn) Enabled(clientfeatures.Feature) bool { return true }

func TestWithoutWatchList(t *testing.T) {
	g := withoutWatchList{allOn{}}
	require.False(t, g.Enabled(clientfeatures.WatchListClient))
	require.True(t, g.Enabled(clientfeatures.InformerResourceVersion), "other features are the base's")
}

func TestDisableWatchList(t *testing.T) {
	require.True(t, clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient), "client-go's default; if it changed, revisit DisableWatchList")
	DisableWatchList()
	require.False(t, clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient))
}
