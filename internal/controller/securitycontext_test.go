package controller_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestPrivilegedWorkloadsAdmitted: the API server accepts the collector and
// bridge Deployments built for a privileged container or one adding
// CAP_SYS_ADMIN. The bridge's old policy added allowPrivilegeEscalation:
// false to them, which the API server refuses, as the last case shows.
func TestPrivilegedWorkloadsAdmitted(t *testing.T) {
	t.Parallel()
	const ns = "privileged-workloads"
	cfg := testenv.Require(t, env)
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	dryRun := func(d *appsv1.Deployment) error {
		d = d.DeepCopy()
		d.Namespace = ns
		return c.Create(t.Context(), d, client.DryRunAll)
	}
	for _, sc := range []string{"{privileged: true}", "{capabilities: {add: [SYS_ADMIN]}}"} {
		t.Run("collector "+sc, func(t *testing.T) {
			doc := strings.Replace(upstreamExample, "  mode: statefulset\n", "  mode: deployment\n  securityContext: "+sc+"\n", 1)
			doc = strings.Replace(doc, "  targetAllocator:\n    enabled: true\n", "", 1)
			var col v1beta1.OpenTelemetryCollector
			require.NoError(t, yaml.Unmarshal([]byte(doc), &col))
			col.Namespace = ns
			built, err := manifests.BuildCollector(&col, manifests.Settings{CollectorImage: "otel/opentelemetry-collector:1"}, nil)
			require.NoError(t, err)
			for _, o := range built.Objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					require.NoError(t, dryRun(d))
				}
			}
		})
		t.Run("bridge "+sc, func(t *testing.T) {
			var b v1alpha1.OpAMPBridge
			require.NoError(t, yaml.Unmarshal([]byte("metadata: {name: b, namespace: x}\nspec: {endpoint: ws://s:4320, capabilities: {ReportsStatus: true}, securityContext: "+sc+"}\n"), &b))
			built, err := opampbridge.Build(&b, opampbridge.Settings{Image: "bridge:1"})
			require.NoError(t, err)
			for _, o := range built.Objects {
				if d, ok := o.(*appsv1.Deployment); ok {
					require.NoError(t, dryRun(d))
				}
			}
		})
	}
	t.Run("the old bridge policy is refused", func(t *testing.T) {
		var b v1alpha1.OpAMPBridge
		require.NoError(t, yaml.Unmarshal([]byte("metadata: {name: b, namespace: x}\nspec: {endpoint: ws://s:4320, capabilities: {ReportsStatus: true}}\n"), &b))
		built, err := opampbridge.Build(&b, opampbridge.Settings{Image: "bridge:1"})
		require.NoError(t, err)
		for _, o := range built.Objects {
			if d, ok := o.(*appsv1.Deployment); ok {
				sc := d.Spec.Template.Spec.Containers[0].SecurityContext
				sc.Privileged, sc.AllowPrivilegeEscalation = ptr.To(true), ptr.To(false)
				err := dryRun(d)
				require.True(t, apierrors.IsInvalid(err), "got %v", err)
			}
		}
	})
}
