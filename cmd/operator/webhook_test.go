package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shardwise/shardwise/internal/instrumentation"
)

func TestWebhookFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, o options)
		wantErr bool
	}{
		{name: "defaults are upstream's", check: func(t *testing.T, o options) {
			require.True(t, o.webhook.enabled)
			require.Equal(t, 9443, o.webhook.port)
			require.Equal(t, "/tmp/k8s-webhook-server/serving-certs", o.webhook.certDir)
			require.Equal(t, instrumentation.DefaultSettings(), o.webhook.settings())
			require.Equal(t, "cert-manager", o.webhook.certManagement)
			require.True(t, o.webhook.sidecar)
		}},
		{name: "sidecar injection off", args: []string{"--enable-sidecar-injection=false"}, check: func(t *testing.T, o options) {
			require.False(t, o.webhook.sidecar)
			require.True(t, o.webhook.enabled)
		}},
		{name: "languages and images", args: []string{
			"--enable-go-instrumentation", "--enable-nginx-instrumentation", "--enable-java-instrumentation=false",
			"--enable-multi-instrumentation=false", "--auto-instrumentation-java-image=registry.example/java:1",
			"--webhook-port=10250", "--webhook-cert-dir=/certs", "--enable-webhooks=false",
		}, check: func(t *testing.T, o options) {
			s := o.webhook.settings()
			require.True(t, s.Enabled[instrumentation.Go])
			require.True(t, s.Enabled[instrumentation.Nginx])
			require.False(t, s.Enabled[instrumentation.Java])
			require.True(t, s.Enabled[instrumentation.SDK])
			require.False(t, s.MultiInstrumentation)
			require.Equal(t, "registry.example/java:1", s.Images[instrumentation.Java])
			require.Equal(t, instrumentation.DefaultPythonImage, s.Images[instrumentation.Python])
			require.Equal(t, 10250, o.webhook.port)
			require.Equal(t, "/certs", o.webhook.certDir)
			require.False(t, o.webhook.enabled)
		}},
		{name: "self-managed certificate", args: []string{"--webhook-cert-management=self", "--webhook-namespace=obs", "--webhook-secret-name=s"}, check: func(t *testing.T, o options) {
			require.Equal(t, "self", o.webhook.certManagement)
			require.Equal(t, "obs", o.webhook.selfTLS.Secret.Namespace)
			require.Equal(t, "s", o.webhook.selfTLS.Secret.Name)
			require.Equal(t, "shardwise-webhook-service", o.webhook.selfTLS.Service)
			require.Equal(t, "shardwise-mutating-webhook-configuration", o.webhook.selfTLS.MutatingWebhookConfiguration)
		}},
		{name: "bad cert management", args: []string{"--webhook-cert-management=vault"}, wantErr: true},
		{name: "bad port", args: []string{"--webhook-port=0"}, wantErr: true},
		{name: "empty image", args: []string{"--auto-instrumentation-go-image="}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseFlags(tc.args, noEnv)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}
