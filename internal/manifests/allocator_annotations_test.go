package manifests_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/manifests"
)

// TestAllocatorAnnotations: the allocator.shardwise.io annotations of a
// TargetAllocator set the handoff and learned weights of its config (keys
// the upstream CRD has no field for); a malformed one is an error naming it,
// and without them nothing is rendered.
func TestAllocatorAnnotations(t *testing.T) {
	t.Parallel()
	ta := allocatorFromExample(t, upstreamExample)
	sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
	plain, err := manifests.RenderAllocatorConfig(ta, sel, nil)
	require.NoError(t, err)
	require.NotContains(t, plain, "handoff")
	require.NotContains(t, plain, "weights")

	ta.Annotations = map[string]string{
		manifests.AnnotationAllocatorHandoffSettle:   "15s",
		manifests.AnnotationAllocatorWeightsQueryURL: "http://prometheus.monitoring:9090",
	}
	rendered, err := manifests.RenderAllocatorConfig(ta, sel, nil)
	require.NoError(t, err)
	var got struct {
		Handoff map[string]any `json:"handoff"`
		Weights map[string]any `json:"weights"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(rendered), &got))
	require.Equal(t, map[string]any{"settle": "15s"}, got.Handoff)
	require.Equal(t, map[string]any{"query_url": "http://prometheus.monitoring:9090"}, got.Weights)
	_, err = allocatorconfig.ParseConfig([]byte(rendered))
	require.NoError(t, err, "the allocator's parser takes it")

	ta.Annotations = map[string]string{manifests.AnnotationAllocatorHandoff: "false"}
	rendered, err = manifests.RenderAllocatorConfig(ta, sel, nil)
	require.NoError(t, err)
	require.Contains(t, rendered, "handoff:\n  enabled: false\n")

	for k, v := range map[string]string{
		manifests.AnnotationAllocatorHandoff:         "off",
		manifests.AnnotationAllocatorHandoffSettle:   "-1s",
		manifests.AnnotationAllocatorWeightsQueryURL: "prometheus:9090",
	} {
		ta.Annotations = map[string]string{k: v}
		_, err := manifests.RenderAllocatorConfig(ta, sel, nil)
		require.ErrorContains(t, err, k)
	}
}

// TestAllocatorAnnotationsFromCollector: on an OpenTelemetryCollector with
// an embedded target allocator, the allocator.shardwise.io annotations reach
// the TargetAllocator the operator makes for it, and no other annotation
// does.
func TestAllocatorAnnotationsFromCollector(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(upstreamExample, "  namespace: observability\n",
		"  namespace: observability\n  annotations:\n    allocator.shardwise.io/handoff-settle: 20s\n    team: a\n", 1)
	ta := allocatorFromExample(t, doc)
	require.Equal(t, map[string]string{manifests.AnnotationAllocatorHandoffSettle: "20s"}, ta.Annotations)
	rendered, err := manifests.RenderAllocatorConfig(ta, nil, nil)
	require.NoError(t, err)
	require.Contains(t, rendered, "settle: 20s")
}
