package controller_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/manifests"
)

// TestAllocatorNetworkPolicyDefault is issue 24 item 3: an allocator that
// discovers monitors in another namespace gets, by default, a NetworkPolicy
// admitting only its collectors and the operator's namespace to its port;
// reading only its own namespace again prunes it.
func TestAllocatorNetworkPolicyDefault(t *testing.T) {
	t.Parallel()
	ns, team := "ta-netpol", "ta-netpol-team"
	s := settings
	s.GrantNamespaces = []string{ns}
	s.OperatorNamespace = "shardwise-system"
	h := startWith(t, managerOptions{namespaces: []string{ns, team}, settings: &s})
	ctx := t.Context()
	doc := strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    prometheusCR:\n      enabled: true\n      allowNamespaces: [ta-netpol, ta-netpol-team]\n      serviceMonitorSelector: {}\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	h.waitReady(t, ns, "collector-with-ta", metav1.ConditionTrue)

	name := manifests.TargetAllocatorNetworkPolicyName("collector-with-ta")
	var np networkingv1.NetworkPolicy
	eventually(t, waitFor, func() error { return h.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &np) })
	var ta appsv1.Deployment
	h.get(t, ns, manifests.TargetAllocatorName("collector-with-ta"), &ta)
	require.Equal(t, ta.Spec.Template.Labels, labelsMatching(ta.Spec.Template.Labels, np.Spec.PodSelector.MatchLabels), "the policy selects the allocator pods")
	var sts appsv1.StatefulSet
	h.get(t, ns, manifests.CollectorName("collector-with-ta"), &sts)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	require.Len(t, np.Spec.Ingress, 1)
	rule := np.Spec.Ingress[0]
	require.Len(t, rule.From, 2)
	require.Nil(t, rule.From[0].NamespaceSelector, "collectors of the allocator's namespace only")
	require.Equal(t, sts.Spec.Template.Labels, labelsMatching(sts.Spec.Template.Labels, rule.From[0].PodSelector.MatchLabels), "the collector pods are admitted")
	require.Equal(t, map[string]string{corev1.LabelMetadataName: "shardwise-system"}, rule.From[1].NamespaceSelector.MatchLabels)
	require.Len(t, rule.Ports, 1)
	require.Equal(t, int32(manifests.TargetAllocatorPort), rule.Ports[0].Port.IntVal)

	c := h.collector(t, ns, "collector-with-ta")
	h.update(t, c, func() { c.Spec.TargetAllocator.PrometheusCR.AllowNamespaces = []string{ns} })
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, client.ObjectKeyFromObject(&np), &networkingv1.NetworkPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("network policy still there: %w", err)
	})
}
