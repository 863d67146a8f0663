package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// upstreamLikeChart is a chart that installs the four CRDs as upstream's
// opentelemetry-operator chart does: as templates, with crds.annotations
// and no keep policy of their own. The CRDs are this repository's (same
// names, same API), which is what matters to Helm.
func upstreamLikeChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	ch := &chartv2.Chart{
		Metadata: &chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: "opentelemetry-operator", Version: "0.100.0"},
		Values:   map[string]any{"crds": map[string]any{"annotations": map[string]any{}}},
	}
	bases := filepath.Join("..", "..", "config", "crd", "bases")
	entries, err := os.ReadDir(bases)
	require.NoError(t, err)
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(bases, e.Name()))
		require.NoError(t, err)
		doc := strings.ReplaceAll(strings.TrimPrefix(string(raw), "---\n"), "{{", `{{ "{{" }}`)
		const anchor = "  annotations:\n"
		require.Contains(t, doc, anchor, e.Name())
		doc = strings.Replace(doc, anchor, anchor+"    {{- with .Values.crds.annotations }}\n    {{- toYaml . | nindent 4 }}\n    {{- end }}\n", 1)
		ch.Templates = append(ch.Templates, &common.File{Name: "templates/crds/" + e.Name(), Data: []byte(doc)})
	}
	return ch
}

// TestUpstreamReleaseMigration follows docs/migration.md, "Coming from the
// upstream Helm chart", with Helm's library on a real API server: a release
// of a chart that installs the CRDs as upstream's does, a user's collector;
// helm upgrade with crds.annotations helm.sh/resource-policy: keep, helm
// uninstall: the CRDs and the collector stay (Helm reads the policy from the
// release's manifest, so annotating the live CRDs would not do); the CRDs
// handed to the shardwise release (its ownership annotations); helm install
// of charts/shardwise adopts them, and the collector is still there. A
// control release whose CRD has no keep policy shows what uninstall does
// otherwise.
func TestUpstreamReleaseMigration(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "run make test-chart, or export KUBEBUILDER_ASSETS=$(./hack/envtest.sh)")
	c, _, kubeconfig := startHelmEnv(t)
	ctx := t.Context()
	crdNames := []string{collectorCRD, "instrumentations.opentelemetry.io", "opampbridges.opentelemetry.io", "targetallocators.opentelemetry.io"}

	// The control: uninstalling a release deletes the CRDs it templates.
	const controlNS = "control"
	control := &chartv2.Chart{
		Metadata: &chartv2.Metadata{APIVersion: chartv2.APIVersionV2, Name: "control", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/crd.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`)}},
	}
	controlHelm := newHelm(t, kubeconfig, controlNS)
	in := action.NewInstall(controlHelm)
	in.ReleaseName, in.Namespace, in.CreateNamespace = "control", controlNS, true
	in.WaitStrategy = kube.HookOnlyStrategy
	runRelease(t, func() (any, error) { return in.RunWithContext(ctx, control, nil) })
	getCRD(t, c, "widgets.example.com")
	uninstall := action.NewUninstall(controlHelm)
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	_, err := uninstall.Run("control")
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	err = c.Get(ctx, client.ObjectKey{Name: "widgets.example.com"}, crd)
	require.True(t, apierrors.IsNotFound(err) || crd.GetDeletionTimestamp() != nil, "without a keep policy, uninstall deletes the CRD: %v", err)

	// The upstream release and a user's collector.
	const upstreamNS, upstreamRelease = "opentelemetry-operator-system", "otel"
	up := newHelm(t, kubeconfig, upstreamNS)
	in = action.NewInstall(up)
	in.ReleaseName, in.Namespace, in.CreateNamespace = upstreamRelease, upstreamNS, true
	in.WaitStrategy = kube.HookOnlyStrategy
	upstreamChart := upstreamLikeChart(t)
	runRelease(t, func() (any, error) { return in.RunWithContext(ctx, upstreamChart, nil) })
	for _, n := range crdNames {
		waitEstablished(t, c, n)
	}
	collector := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "opentelemetry.io/v1beta1", "kind": "OpenTelemetryCollector",
		"metadata": map[string]any{"name": "kept", "namespace": "default"},
		"spec": map[string]any{"config": map[string]any{
			"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{}}}},
			"exporters": map[string]any{"debug": map[string]any{}},
			"service": map[string]any{"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []any{"otlp"}, "exporters": []any{"debug"}}}}}},
	}}
	require.NoError(t, c.Create(ctx, collector))

	// Step 1: the upstream release's CRDs get the keep policy, through the
	// release (helm upgrade --reuse-values --set crds.annotations...).
	upgrade := action.NewUpgrade(up)
	upgrade.Namespace, upgrade.ReuseValues = upstreamNS, true
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	runRelease(t, func() (any, error) {
		return upgrade.RunWithContext(ctx, upstreamRelease, upstreamChart, map[string]any{
			"crds": map[string]any{"annotations": map[string]any{"helm.sh/resource-policy": "keep"}},
		})
	})
	// Step 2: helm uninstall keeps them, and so the collector.
	uninstall = action.NewUninstall(up)
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	_, err = uninstall.Run(upstreamRelease)
	require.NoError(t, err)
	for _, n := range crdNames {
		require.Nil(t, getCRD(t, c, n).GetDeletionTimestamp(), "%s is kept", n)
	}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(collector), collector), "the collector survives the upstream release")

	// Step 3: hand the CRDs to the shardwise release.
	const ns, release = "observability", "sw"
	for _, n := range crdNames {
		patch := `{"metadata":{"annotations":{"meta.helm.sh/release-name":"` + release + `","meta.helm.sh/release-namespace":"` + ns + `"}}}`
		require.NoError(t, c.Patch(ctx, getCRD(t, c, n), client.RawPatch(types.MergePatchType, []byte(patch))))
	}
	// Step 4: helm install adopts them.
	sw := newHelm(t, kubeconfig, ns)
	in = action.NewInstall(sw)
	in.ReleaseName, in.Namespace, in.CreateNamespace = release, ns, true
	in.WaitStrategy = kube.HookOnlyStrategy
	// No cert-manager here: the operator manages the webhook certificate.
	rel := runRelease(t, func() (any, error) {
		return in.RunWithContext(ctx, loadChart(t), map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "self"}}})
	})
	require.Equal(t, "deployed", rel.Info.Status.String())
	for _, n := range crdNames {
		got := getCRD(t, c, n)
		require.Equal(t, release, got.GetAnnotations()["meta.helm.sh/release-name"], n)
		require.Equal(t, "keep", got.GetAnnotations()["helm.sh/resource-policy"], "%s: now the shardwise chart's", n)
	}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(collector), collector), "the collector is still there")
}
