package controller_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// TestCollectorUsesExistingTargetAllocator: a collector labelled
// opentelemetry.io/target-allocator=<name> polls that TargetAllocator, and the
// operator creates no allocator of its own for it; the named allocator serves
// the collector's scrape configs to the collector's pods.
func TestCollectorUsesExistingTargetAllocator(t *testing.T) {
	t.Parallel()
	ns := "shared-allocator"
	h := start(t, ns)
	ctx := t.Context()

	_, err := h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: shared
spec: {}
`)
	require.NoError(t, err)
	labelled := strings.Replace(upstreamExample, "  name: collector-with-ta\n",
		"  name: collector-with-ta\n  labels:\n    "+manifests.LabelTargetAllocator+": shared\n", 1)
	require.Contains(t, labelled, manifests.LabelTargetAllocator, "the example's metadata moved; update the test")
	_, err = h.createYAML(t, ns, labelled)
	require.NoError(t, err)
	const name = "collector-with-ta"

	h.waitReady(t, ns, name, metav1.ConditionTrue)

	// The collector polls the named allocator.
	c := h.collector(t, ns, name)
	var cm corev1.ConfigMap
	eventually(t, waitFor, func() error {
		var list corev1.ConfigMapList
		if err := h.client.List(ctx, &list); err != nil {
			return err
		}
		for _, item := range list.Items {
			if item.Namespace == ns && strings.HasPrefix(item.Name, name+"-collector-") {
				cm = item
				return nil
			}
		}
		return fmt.Errorf("no collector ConfigMap yet")
	})
	require.Contains(t, cm.Data["collector.yaml"], "endpoint: http://shared-targetallocator:80")

	// No allocator of the collector's own name.
	var own v1alpha1.TargetAllocator
	err = h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &own)
	require.True(t, apierrors.IsNotFound(err), "a collector naming an existing allocator must not get its own: %v", err)

	// The named allocator selects the collector's pods and serves its jobs.
	var taConfig corev1.ConfigMap
	eventually(t, waitFor, func() error {
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shared-targetallocator"}, &taConfig); err != nil {
			return err
		}
		if !strings.Contains(taConfig.Data["targetallocator.yaml"], "otel-collector") {
			return fmt.Errorf("allocator config has no collector jobs yet:\n%s", taConfig.Data["targetallocator.yaml"])
		}
		return nil
	})
	var rendered struct {
		CollectorSelector metav1.LabelSelector `json:"collector_selector"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(taConfig.Data["targetallocator.yaml"]), &rendered))
	require.Equal(t, manifests.SelectorLabels(ns, c.Name, manifests.ComponentCollector), rendered.CollectorSelector.MatchLabels)
}
