package main

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/log"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, o options)
		wantErr bool
	}{
		{"defaults, as upstream but the proxy", nil, func(t *testing.T, o options) {
			require.Equal(t, "/conf/remoteconfiguration.yaml", o.configFile)
			require.Empty(t, o.listenAddr, "the proxy is opt-in (upstream: :8080)")
			require.Equal(t, ":8081", o.healthListenAddr)
			require.Equal(t, 30*time.Second, o.heartbeatInterval)
			require.Equal(t, "opamp-bridge", o.name)
			require.Equal(t, filepath.Join(".kube", "config"), filepath.Join(filepath.Base(filepath.Dir(o.kubeconfigPath)), filepath.Base(o.kubeconfigPath)))
			require.Empty(t, o.watchNamespace)
			require.Equal(t, slog.LevelInfo, o.log.EffectiveLevel())
			require.Equal(t, log.FormatJSON, o.log.EffectiveFormat())
		}, false},
		{"all", []string{"--config-file=/c.yaml", "--listen-addr=:1", "--health-listen-addr=:2", "--heartbeat-interval=5s", "--name=fleet", "--kubeconfig-path=/k", "--watch-namespace=obs", "--log-level=debug", "--log-format=text"}, func(t *testing.T, o options) {
			require.Equal(t, slog.LevelDebug, o.log.EffectiveLevel())
			require.Equal(t, log.FormatText, o.log.EffectiveFormat())
			o.log = log.Options{}
			require.Equal(t, options{configFile: "/c.yaml", listenAddr: ":1", healthListenAddr: ":2", heartbeatInterval: 5 * time.Second, name: "fleet", kubeconfigPath: "/k", watchNamespace: "obs"}, o)
		}, false},
		{"negative heartbeat", []string{"--heartbeat-interval=-1s"}, nil, true},
		{"version", []string{"--version", "stray"}, func(t *testing.T, o options) {
			require.True(t, o.printVersion)
		}, false},
		{"upstream zap flags", []string{"--zap-log-level=debug", "--zap-encoder=console", "--zap-time-encoding=iso8601"}, func(t *testing.T, o options) {
			require.Equal(t, slog.LevelDebug, o.log.EffectiveLevel())
			require.Equal(t, log.FormatText, o.log.EffectiveFormat())
		}, false},
		{"bad log level", []string{"--log-level=loud"}, nil, true},
		{"unknown flag", []string{"--mode=standalone"}, nil, true},
		{"stray argument", []string{"x"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(tc.args)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}
