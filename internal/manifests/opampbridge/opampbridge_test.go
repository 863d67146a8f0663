package opampbridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
)

var settings = opampbridge.Settings{Image: "ghcr.io/shardwise/opamp-bridge:v0.3.0"}

// UpstreamExample is the upstream operator's sample OpAMPBridge
// (config/samples/_v1alpha1_opampbridge.yaml) with a namespace.
const UpstreamExample = `
apiVersion: opentelemetry.io/v1alpha1
kind: OpAMPBridge
metadata:
  name: opampbridge-sample
  namespace: observability
spec:
  endpoint: ws://opamp-server:4320/v1/opamp
  capabilities:
    AcceptsOpAMPConnectionSettings: true
    AcceptsOtherConnectionSettings: true
    AcceptsRemoteConfig: true
    AcceptsRestartCommand: true
    ReportsEffectiveConfig: true
    ReportsHealth: true
    ReportsOwnLogs: true
    ReportsOwnMetrics: true
    ReportsOwnTraces: true
    ReportsRemoteConfig: true
    ReportsStatus: true
  componentsAllowed:
    receivers:
    - otlp
    processors:
    - memory_limiter
    exporters:
    - debug
`

const tuned = `
apiVersion: opentelemetry.io/v1alpha1
kind: OpAMPBridge
metadata:
  name: tuned
  namespace: fleet
spec:
  endpoint: wss://opamp.example.com/v1/opamp
  tls:
    insecure_skip_verify: true
  headers:
    Authorization: Bearer t0ken
  proxy:
    url: http://proxy:3128
  capabilities:
    ReportsEffectiveConfig: true
  description:
    non_identifying_attributes:
      cluster: east
  image: example.com/bridge:1.2.3
  serviceAccount: my-bridge
  podAnnotations:
    team: obs
  env:
  - name: OTELCOL_NAMESPACE
    value: elsewhere
  ports:
  - name: extra
    port: 9000
  securityContext:
    readOnlyRootFilesystem: false
  podSecurityContext:
    runAsUser: 1000
  hostNetwork: true
  podDnsConfig:
    nameservers: [10.0.0.10]
`

func decode(t *testing.T, doc string) *v1alpha1.OpAMPBridge {
	t.Helper()
	var b v1alpha1.OpAMPBridge
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &b))
	return &b
}

func render(t *testing.T, objs ...[]client.Object) string {
	t.Helper()
	var b strings.Builder
	for _, list := range objs {
		for _, o := range list {
			if b.Len() > 0 {
				b.WriteString("---\n")
			}
			y, err := yaml.Marshal(o)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, yaml.Unmarshal(y, &m))
			delete(m, "status")
			y, err = yaml.Marshal(m)
			require.NoError(t, err)
			b.Write(y)
		}
	}
	return b.String()
}

func TestBuildGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		doc      string
		settings opampbridge.Settings
	}{
		{"upstream-example", UpstreamExample, settings},
		{"upstream-example-cluster-wide", UpstreamExample, opampbridge.Settings{Image: settings.Image, ClusterWide: true}},
		{"tuned", tuned, settings},
		{"serve-agents", UpstreamExample + "  serveAgents: true\n", settings},
		{"serve-agents-cluster-wide", UpstreamExample + "  serveAgents: true\n", opampbridge.Settings{Image: settings.Image, ClusterWide: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := opampbridge.Build(decode(t, tc.doc), tc.settings)
			require.NoError(t, err)
			golden.Assert(t, render(t, got.Objects, got.ClusterObjects), tc.name+".golden.yaml")
		})
	}
}

// TestConfigEditChangesHash: any edit of the rendered configuration changes
// the pod template's hash annotation (so the Deployment rolls); an edit of a
// pod-only field does not change the ConfigMap.
func TestConfigEditChangesHash(t *testing.T) {
	t.Parallel()
	base := decode(t, UpstreamExample)
	hashOf := func(b *v1alpha1.OpAMPBridge) (string, string) {
		out, err := opampbridge.Build(b, settings)
		require.NoError(t, err)
		for _, o := range out.Objects {
			if d, ok := o.(*appsv1.Deployment); ok {
				return out.ConfigHash, d.Spec.Template.Annotations[opampbridge.AnnotationConfigHash]
			}
		}
		t.Fatal("no deployment")
		return "", ""
	}
	h0, a0 := hashOf(base)
	require.Equal(t, h0, a0)
	for _, edit := range []func(b *v1alpha1.OpAMPBridge){
		func(b *v1alpha1.OpAMPBridge) { b.Spec.Endpoint = "ws://other:4320/v1/opamp" },
		func(b *v1alpha1.OpAMPBridge) { b.Spec.ComponentsAllowed["exporters"] = []string{"otlp"} },
		func(b *v1alpha1.OpAMPBridge) { b.Spec.Headers = map[string]string{"a": "b"} },
		func(b *v1alpha1.OpAMPBridge) {
			b.Spec.Capabilities[v1alpha1.OpAMPBridgeCapabilityAcceptsRemoteConfig] = false
		},
	} {
		b := base.DeepCopy()
		edit(b)
		h, a := hashOf(b)
		require.NotEqual(t, h0, h)
		require.Equal(t, h, a)
	}
	b := base.DeepCopy()
	b.Spec.NodeSelector = map[string]string{"x": "y"}
	h, _ := hashOf(b)
	require.Equal(t, h0, h)
}

// TestReportsStatusAlwaysOn: the rendered configuration announces
// ReportsStatus even when the resource does not name it.
func TestReportsStatusAlwaysOn(t *testing.T) {
	t.Parallel()
	b := decode(t, tuned)
	rendered, err := opampbridge.RenderConfig(b)
	require.NoError(t, err)
	var cfg struct {
		Capabilities map[string]bool `json:"capabilities"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(rendered), &cfg))
	require.Equal(t, map[string]bool{"ReportsStatus": true, "ReportsEffectiveConfig": true}, cfg.Capabilities)
}

// TestUserSecurityContextWins: the user's fields win, unset ones get the
// restricted defaults.
func TestUserSecurityContextWins(t *testing.T) {
	t.Parallel()
	out, err := opampbridge.Build(decode(t, tuned), settings)
	require.NoError(t, err)
	var pod corev1.PodSpec
	for _, o := range out.Objects {
		if d, ok := o.(*appsv1.Deployment); ok {
			pod = d.Spec.Template.Spec
		}
	}
	sc := pod.Containers[0].SecurityContext
	require.False(t, *sc.ReadOnlyRootFilesystem)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	require.Equal(t, int64(1000), *pod.SecurityContext.RunAsUser)
	require.True(t, *pod.SecurityContext.RunAsNonRoot)
}

// TestPrivilegedOrRootBridgeIsAdmissible: the old policy of the bridge added
// allowPrivilegeEscalation: false to a privileged container, which the API
// server refuses, and runAsNonRoot: true to a container running as user 0,
// which the kubelet refuses to start. The shared policy leaves them out.
func TestPrivilegedOrRootBridgeIsAdmissible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, sc string }{
		{"privileged", "  securityContext:\n    privileged: true\n"},
		{"root", "  securityContext:\n    runAsUser: 0\n"},
		{"root pod", "  podSecurityContext:\n    runAsUser: 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := opampbridge.Build(decode(t, UpstreamExample+tc.sc), settings)
			require.NoError(t, err)
			var pod corev1.PodSpec
			for _, o := range out.Objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					pod = d.Spec.Template.Spec
				}
			}
			sc := pod.Containers[0].SecurityContext
			if sc.Privileged != nil && *sc.Privileged {
				require.Nil(t, sc.AllowPrivilegeEscalation)
				return
			}
			require.Nil(t, sc.RunAsNonRoot)
			require.Nil(t, pod.SecurityContext.RunAsNonRoot)
		})
	}
}

// TestClusterWideImagePinned: a cluster-wide bridge runs the operator's
// bridge image only; a namespaced one may name its own.
func TestClusterWideImagePinned(t *testing.T) {
	t.Parallel()
	b := decode(t, UpstreamExample)
	b.Spec.Image = "registry.example/anything:1"
	_, err := opampbridge.Build(b, opampbridge.Settings{Image: settings.Image, ClusterWide: true})
	require.ErrorIs(t, err, opampbridge.ErrClusterWideImage)
	got, err := opampbridge.Build(b, opampbridge.Settings{Image: settings.Image})
	require.NoError(t, err)
	require.Equal(t, "registry.example/anything:1", got.Image)
	b.Spec.Image = settings.Image
	_, err = opampbridge.Build(b, opampbridge.Settings{Image: settings.Image, ClusterWide: true})
	require.NoError(t, err, "the operator's own image, named explicitly")
}

// TestAgentServerOptIn: without serveAgents the bridge listens on no OpAMP
// port and has no Service; with it, the port is published and a
// NetworkPolicy admits only collector pods to it.
func TestAgentServerOptIn(t *testing.T) {
	t.Parallel()
	off, err := opampbridge.Build(decode(t, UpstreamExample), settings)
	require.NoError(t, err)
	for _, o := range off.Objects {
		require.NotContains(t, []string{"*v1.Service", "*v1.NetworkPolicy"}, fmt.Sprintf("%T", o))
		if d, ok := o.(*appsv1.Deployment); ok {
			c := d.Spec.Template.Spec.Containers[0]
			require.NotContains(t, strings.Join(c.Args, " "), "--listen-addr")
			require.Len(t, c.Ports, 1)
			require.Equal(t, "healthz", c.Ports[0].Name)
		}
	}

	on, err := opampbridge.Build(decode(t, UpstreamExample+"  serveAgents: true\n"), settings)
	require.NoError(t, err)
	var np *networkingv1.NetworkPolicy
	var svc *corev1.Service
	for _, o := range on.Objects {
		switch o := o.(type) {
		case *networkingv1.NetworkPolicy:
			np = o
		case *corev1.Service:
			svc = o
		case *appsv1.Deployment:
			require.Contains(t, o.Spec.Template.Spec.Containers[0].Args, "--listen-addr=:8080")
		}
	}
	require.NotNil(t, svc)
	require.Equal(t, int32(8080), svc.Spec.Ports[0].TargetPort.IntVal)
	require.NotNil(t, np)
	require.Len(t, np.Spec.Ingress, 1)
	from := np.Spec.Ingress[0].From
	require.Len(t, from, 1)
	require.Equal(t, map[string]string{"app.kubernetes.io/component": "opentelemetry-collector"}, from[0].PodSelector.MatchLabels)
	require.Nil(t, from[0].NamespaceSelector, "a namespaced bridge admits its own namespace's collectors only")
	require.Equal(t, int32(8080), np.Spec.Ingress[0].Ports[0].Port.IntVal)
}
