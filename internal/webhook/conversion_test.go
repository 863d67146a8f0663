package webhook

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/manifests"
)

func createFromFile(t *testing.T, c client.Client, ns, file string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "conversion", file))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(b, &u.Object))
	u.SetNamespace(ns)
	require.NoError(t, c.Create(t.Context(), u), "create %s as written", file)
}

// TestConversionWebhook applies an upstream v1alpha1 manifest unchanged on a
// real API server whose collector CRD converts through the operator's
// webhook over TLS, and checks it reads back as v1beta1 equal to its v1beta1
// twin, builds the same objects, and reads back as v1alpha1 as written.
func TestConversionWebhook(t *testing.T) {
	op := startOperator(t, instrumentation.DefaultSettings())
	t.Cleanup(func() { op.stop(t) })
	c := op.client

	var nsAlpha, nsBeta string
	for _, ns := range []*string{&nsAlpha, &nsBeta} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "conversion-"}}
		require.NoError(t, c.Create(t.Context(), n))
		*ns = n.Name
	}
	createFromFile(t, c, nsAlpha, "v1alpha1.yaml")
	createFromFile(t, c, nsBeta, "v1beta1.yaml")

	var alphaAsBeta, beta v1beta1.OpenTelemetryCollector
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: nsAlpha, Name: "simplest"}, &alphaAsBeta))
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: nsBeta, Name: "simplest"}, &beta))
	// The converted object carries targetAllocator.prometheusCR (v1alpha1's
	// empty selector maps become empty, select-all selectors, as upstream
	// converts them), so the v1beta1 schema defaults the disabled
	// allocator's durations where the YAML twin has no targetAllocator at
	// all; everything else is the same.
	require.False(t, alphaAsBeta.Spec.TargetAllocator.Enabled)
	twinSpec := alphaAsBeta.Spec.DeepCopy()
	twinSpec.TargetAllocator = beta.Spec.TargetAllocator
	// Compared as JSON, where an empty list and an absent one are the same.
	want, err := json.Marshal(beta.Spec)
	require.NoError(t, err)
	got, err := json.Marshal(twinSpec)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "the v1alpha1 manifest and its v1beta1 twin mean the same")
	require.Equal(t, int32(2), *alphaAsBeta.Spec.Autoscaler.MaxReplicas, "deprecated spec.maxReplicas moves into the autoscaler")

	var alphaBuilt manifests.Collector
	s := manifests.Settings{CollectorImage: "otelcol:1"}
	alphaBuilt, err = manifests.BuildCollector(&alphaAsBeta, s, nil)
	require.NoError(t, err)
	alphaAsBeta.Namespace = nsBeta
	alphaAsBeta.UID, alphaAsBeta.ResourceVersion, alphaAsBeta.CreationTimestamp = beta.UID, beta.ResourceVersion, beta.CreationTimestamp
	alphaAsBeta.Annotations, alphaAsBeta.ManagedFields = beta.Annotations, beta.ManagedFields
	twinBuilt, err := manifests.BuildCollector(&alphaAsBeta, s, nil)
	require.NoError(t, err)
	betaBuilt, err := manifests.BuildCollector(&beta, s, nil)
	require.NoError(t, err)
	require.Equal(t, betaBuilt, twinBuilt, "the operator builds the same objects for both")
	require.NotEmpty(t, alphaBuilt.Objects)

	// Reading it back in the version it was written in gives the manifest
	// back, its config string's comments and layout included.
	var alpha v1alpha1.OpenTelemetryCollector
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: nsAlpha, Name: "simplest"}, &alpha))
	require.Contains(t, alpha.Spec.Config, "processors:\n\nexporters:")
	require.Equal(t, int32(2), *alpha.Spec.MaxReplicas)
	require.Nil(t, alpha.Spec.Autoscaler.MaxReplicas)
	require.NotContains(t, alpha.Annotations, v1alpha1.AnnotationV1alpha1Spec, "the stash never shows in the version it stashes")
	// A second write of the manifest as read changes nothing.
	require.NoError(t, c.Update(t.Context(), &alpha))
	var again v1alpha1.OpenTelemetryCollector
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: nsAlpha, Name: "simplest"}, &again))
	require.Equal(t, alpha.Spec, again.Spec)

	// The v1beta1 twin reads as v1alpha1 too.
	var betaAsAlpha v1alpha1.OpenTelemetryCollector
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: nsBeta, Name: "simplest"}, &betaAsAlpha))
	require.Equal(t, int32(2), *betaAsAlpha.Spec.Autoscaler.MaxReplicas)
	require.Contains(t, betaAsAlpha.Spec.Config, "receivers:")
}
