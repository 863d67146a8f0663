package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/log"
	"github.com/shardwise/shardwise/internal/version"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		want    options
		wantErr bool
	}{
		{"defaults", nil, options{metricsAddr: ":8080", probeAddr: ":8081", collectorImage: defaultCollectorImage, targetAllocatorImage: "ghcr.io/shardwise/allocator:" + version.Version, concurrency: 4, opampBridgeImage: "ghcr.io/shardwise/opamp-bridge:" + version.Version}, false},
		{"all", []string{"--metrics-bind-address=0", "--health-probe-bind-address=:9", "--leader-elect", "--leader-election-namespace=ops", "--collector-image=c", "--target-allocator-image=a", "--watch-namespace=obs", "--max-concurrent-reconciles=1", "--allow-cluster-wide-grants"},
			options{metricsAddr: "0", probeAddr: ":9", leaderElect: true, leaderElectionNS: "ops", collectorImage: "c", targetAllocatorImage: "a", watchNamespaces: []string{"obs"}, concurrency: 1, clusterWideGrants: true, opampBridgeImage: "ghcr.io/shardwise/opamp-bridge:" + version.Version}, false},
		{"grant namespaces", []string{"--target-allocator-cluster-wide-namespaces=observability, platform"},
			options{metricsAddr: ":8080", probeAddr: ":8081", collectorImage: defaultCollectorImage, targetAllocatorImage: "ghcr.io/shardwise/allocator:" + version.Version, concurrency: 4,
				opampBridgeImage: "ghcr.io/shardwise/opamp-bridge:" + version.Version, grantNamespaces: []string{"observability", "platform"}}, false},
		{"opamp bridge", []string{"--opamp-bridge-image=b:1", "--opamp-bridge-cluster-wide-namespaces=obs, fleet"},
			options{metricsAddr: ":8080", probeAddr: ":8081", collectorImage: defaultCollectorImage, targetAllocatorImage: "ghcr.io/shardwise/allocator:" + version.Version, concurrency: 4,
				opampBridgeImage: "b:1", opampBridgeClusterWide: []string{"obs", "fleet"}}, false},
		{"version skips the other checks", []string{"--version", "--max-concurrent-reconciles=0"},
			options{metricsAddr: ":8080", probeAddr: ":8081", collectorImage: defaultCollectorImage, targetAllocatorImage: "ghcr.io/shardwise/allocator:" + version.Version, opampBridgeImage: "ghcr.io/shardwise/opamp-bridge:" + version.Version, printVersion: true}, false},
		{"zero concurrency", []string{"--max-concurrent-reconciles=0"}, options{}, true},
		{"unknown flag", []string{"--nope"}, options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseFlags(tc.args, noEnv)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			got.webhook = webhookOptions{}   // TestWebhookFlags covers these
			got.log = log.Options{}          // internal/log's TestFlags covers these
			got.upstream = upstreamOptions{} // TestUpstreamFlags covers these
			require.Equal(t, tc.want, got)
		})
	}
}
