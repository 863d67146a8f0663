package controller_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
)

// TestScaleSubresourceWithoutReplicas is issue 17's report: a collector that
// does not set replicas (as upstream's examples do not) must still answer on
// its scale subresource, so that kubectl scale and an HPA work. The schema
// defaults replicas to 1, as upstream's does.
func TestScaleSubresourceWithoutReplicas(t *testing.T) {
	t.Parallel()
	ns := "scale-no-replicas"
	h := start(t, ns)
	ctx := t.Context()
	// The upstream example, which sets no replicas.
	_, err := h.createYAML(t, ns, upstreamExample)
	require.NoError(t, err)
	c := h.collector(t, ns, "collector-with-ta")
	require.NotNil(t, c.Spec.Replicas, "the schema defaults replicas")
	require.Equal(t, int32(1), *c.Spec.Replicas)

	var scale autoscalingv1.Scale
	require.NoError(t, h.client.SubResource("scale").Get(ctx, c, &scale))
	require.Equal(t, int32(1), scale.Spec.Replicas)

	h.scale(t, c, 2)
	got := h.collector(t, ns, c.Name)
	require.NotNil(t, got.Spec.Replicas)
	require.Equal(t, int32(2), *got.Spec.Replicas)
}
