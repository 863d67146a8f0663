package chart

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// secretLimit is the most data a Secret, and so a Helm release record, may
// hold.
const secretLimit = 1 << 20

// recordBudget is the most a release record of the chart may take: half a
// Secret, so that the CRDs can grow (a new API field adds its own
// description, and the whole schema of a Kubernetes type it embeds) for a
// long while before helm install would fail. hack/crdslim keeps the
// Kubernetes types' descriptions out of the chart's CRDs to stay under it.
const recordBudget = secretLimit / 2

// TestHelmLifecycle runs Helm itself (the library behind helm install,
// upgrade and uninstall, server-side apply, release records in Secrets)
// against a real kube-apiserver with the default values:
//   - install: the release record, which holds the chart and the rendered
//     CRDs, fits in half of its Secret;
//   - upgrade with a changed CRD: the CRD is upgraded (crds/ never would be),
//     and the CA cert-manager injected into the conversion webhook stays;
//   - uninstall: the pre-delete hook runs the operator binary with
//     --uninstall as the chart's ServiceAccount, which releases a
//     TargetAllocator's finalizer and its grant in another namespace; the
//     Deployment goes, the CRDs and a user's collector stay
//     (helm.sh/resource-policy: keep);
//   - install again under the same name: the kept CRDs are adopted;
//   - upgrade to crds.install=false: the CRDs stay.
func TestHelmLifecycle(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "run make test-chart, or export KUBEBUILDER_ASSETS=$(./hack/envtest.sh)")
	operator := requireEnv(t, "SHARDWISE_OPERATOR_BIN", "run make test-chart, or make build and export SHARDWISE_OPERATOR_BIN=<repo>/bin/operator")
	c, cfg, kubeconfig := startHelmEnv(t)
	certManagerCRDs, err := os.ReadFile(filepath.Join("testdata", "crds", "cert-manager.yaml"))
	require.NoError(t, err)
	cmCRDs, err := decode(string(certManagerCRDs))
	require.NoError(t, err)
	applyAll(t, c, cmCRDs)

	const ns, release = "observability", "sw"
	helm := newHelm(t, kubeconfig, ns)
	ch := loadChart(t)

	// helm install --create-namespace sw charts/shardwise -n observability
	in := action.NewInstall(helm)
	in.ReleaseName, in.Namespace, in.CreateNamespace = release, ns, true
	in.WaitStrategy = kube.HookOnlyStrategy // no kubelet: nothing becomes ready
	rel := runRelease(t, func() (any, error) { return in.RunWithContext(t.Context(), ch, nil) })
	require.Equal(t, "deployed", rel.Info.Status.String())
	requireRecordFits(t, c, ns, release, 1)

	crd := getCRD(t, c, collectorCRD)
	require.Equal(t, release, crd.GetAnnotations()["meta.helm.sh/release-name"], "Helm owns the CRD")
	require.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"])
	require.Equal(t, ns+"/sw-shardwise-serving-cert", crd.GetAnnotations()["cert-manager.io/inject-ca-from"])
	for _, name := range []string{"instrumentations.opentelemetry.io", "opampbridges.opentelemetry.io", "targetallocators.opentelemetry.io"} {
		require.Equal(t, release, getCRD(t, c, name).GetAnnotations()["meta.helm.sh/release-name"], name)
	}

	// A user's collector (once the API server serves the kind: helm install
	// does not wait for that), and cainjector's CA in the conversion webhook.
	waitEstablished(t, c, collectorCRD)
	collector := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "opentelemetry.io/v1beta1", "kind": "OpenTelemetryCollector",
		"metadata": map[string]any{"name": "users", "namespace": "default"},
		"spec": map[string]any{"config": map[string]any{
			"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{"grpc": map[string]any{}}}},
			"exporters": map[string]any{"debug": map[string]any{}},
			"service": map[string]any{"pipelines": map[string]any{"traces": map[string]any{
				"receivers": []any{"otlp"}, "exporters": []any{"debug"}}}}}},
	}}
	require.NoError(t, c.Create(t.Context(), collector))
	caBundle := base64.StdEncoding.EncodeToString(newTestCA(t).certPEM)
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, caBundle)
	require.NoError(t, c.Patch(t.Context(), crd, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("cainjector")))

	// helm upgrade with a chart whose collector CRD changed (a new short
	// name, as a new API field would).
	next := withTemplate(t, ch, "templates/crds/opentelemetry.io_opentelemetrycollectors.yaml", "    - otelcols\n", "    - otelcols\n    - swcol\n")
	up := action.NewUpgrade(helm)
	up.Namespace = ns
	up.WaitStrategy = kube.HookOnlyStrategy
	rel = runRelease(t, func() (any, error) { return up.RunWithContext(t.Context(), release, next, nil) })
	require.Equal(t, 2, rel.Version)
	crd = getCRD(t, c, collectorCRD)
	shortNames, _, _ := unstructured.NestedStringSlice(crd.Object, "spec", "names", "shortNames")
	require.Contains(t, shortNames, "swcol", "helm upgrade upgrades the CRDs")
	got, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	require.Equal(t, caBundle, got, "helm upgrade leaves the injected CA")
	requireRecordFits(t, c, ns, release, 2)

	// A TargetAllocator the operator granted rights in another namespace:
	// its finalizer, and a RoleBinding there, as the operator leaves them.
	ta := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "opentelemetry.io/v1alpha1", "kind": "TargetAllocator",
		"metadata": map[string]any{"name": "granted", "namespace": "default", "finalizers": []any{"opentelemetry.io/shardwise-cluster-rbac"}},
		"spec":     map[string]any{"prometheusCR": map[string]any{"enabled": true, "allowNamespaces": []any{"default", "kube-public"}}},
	}}
	require.NoError(t, c.Create(t.Context(), ta))
	grant := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "granted-targetallocator",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "opentelemetry-operator", "app.kubernetes.io/instance": "default.granted", "app.kubernetes.io/component": "opentelemetry-targetallocator"},
			Annotations: map[string]string{"opentelemetry.io/shardwise-owner": "default/granted"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "shardwise-targetallocator-secret-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "granted-targetallocator", Namespace: "default"}},
	}
	require.NoError(t, c.Create(t.Context(), grant))

	// helm uninstall: the pre-delete hook runs the operator with
	// --uninstall, played here as the kubelet would run its Job.
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	hook := playJob(t, cs, cfg, operator, ns, "sw-shardwise-operator-uninstall", "sw-shardwise-operator")
	un := action.NewUninstall(helm)
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = readyTimeout
	res, err := un.Run(release)
	require.NoError(t, err)
	run := <-hook
	require.NoError(t, run.err, "the uninstall hook:\n%s", run.output)
	require.Contains(t, run.args, "--uninstall")
	require.Contains(t, run.output, "finalizers released")
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(ta), ta))
	require.Empty(t, ta.GetFinalizers(), "the hook removed the operator's finalizer")
	err = c.Get(t.Context(), client.ObjectKeyFromObject(grant), grant)
	require.True(t, apierrors.IsNotFound(err), "the hook deleted the grant in the other namespace: %v", err)
	require.NoError(t, c.Delete(t.Context(), ta), "the allocator can go without an operator")
	require.Contains(t, res.Info, "kept due to the resource policy", "Helm says which objects it kept")
	deployment := &unstructured.Unstructured{}
	deployment.SetAPIVersion("apps/v1")
	deployment.SetKind("Deployment")
	err = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "sw-shardwise-operator"}, deployment)
	require.True(t, apierrors.IsNotFound(err), "the Deployment is deleted: %v", err)
	requireCRDsKept(t, c)
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(collector), collector.DeepCopy()), "the user's collector is kept")

	// helm install again under the same name adopts the kept CRDs.
	in = action.NewInstall(helm)
	in.ReleaseName, in.Namespace = release, ns
	in.WaitStrategy = kube.HookOnlyStrategy
	runRelease(t, func() (any, error) { return in.RunWithContext(t.Context(), ch, nil) })

	// helm upgrade --set crds.install=false leaves them too.
	up = action.NewUpgrade(helm)
	up.Namespace = ns
	up.WaitStrategy = kube.HookOnlyStrategy
	rel = runRelease(t, func() (any, error) {
		return up.RunWithContext(t.Context(), release, ch, values(t, `crds: {install: false}`))
	})
	require.NotContains(t, rel.Manifest, "kind: CustomResourceDefinition")
	requireRecordFits(t, c, ns, release, rel.Version)
	requireCRDsKept(t, c)
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(collector), collector.DeepCopy()), "the user's collector is kept")
}

// newHelm is an action configuration for the API server of kubeconfig,
// storing releases in Secrets of ns, as the helm CLI does.
// startHelmEnv starts an API server (envtest) until the test ends and
// returns an admin client, its config and the kubeconfig file of a cluster admin for
// Helm.
func startHelmEnv(t *testing.T) (client.Client, *rest.Config, string) {
	t.Helper()
	env := &envtest.Environment{}
	cfg, err := env.Start()
	require.NoError(t, err, "start envtest")
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	user, err := env.AddUser(envtest.User{Name: "helm", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.KubeConfig()
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, kc, 0o600))
	return c, cfg, kubeconfig
}

func newHelm(t *testing.T, kubeconfig, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	flags.Namespace = &ns
	helm := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	require.NoError(t, helm.Init(flags, ns, "secret"))
	return helm
}

// runRelease runs a Helm action that returns a release.
func runRelease(t *testing.T, run func() (any, error)) *releasev1.Release {
	t.Helper()
	r, err := run()
	require.NoError(t, err)
	rel, ok := r.(*releasev1.Release)
	require.True(t, ok, "release type %T", r)
	return rel
}

// requireRecordFits checks the Secret Helm stored revision in (it was
// stored, so the API server took it), reports how full it is, and fails when
// the record is over recordBudget.
func requireRecordFits(t *testing.T, c client.Client, ns, release string, revision int) {
	t.Helper()
	s := &corev1.Secret{}
	name := fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, revision)
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s))
	size := len(s.Data["release"])
	t.Logf("release record %s: %d bytes, %.0f%% of a Secret's %d", name, size, 100*float64(size)/secretLimit, secretLimit)
	require.Less(t, size, recordBudget, "the release record takes over half of its Secret: "+
		"keep Kubernetes types' descriptions out of the chart's CRDs (hack/crdslim) or make room before a new field breaks helm install")
}

func getCRD(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, crd), "CRD %s", name)
	return crd
}

// requireCRDsKept checks that the chart's CRDs exist and are not being
// deleted (a CRD Helm had deleted would be gone or, while the API server
// removes its objects, have a deletion timestamp).
func requireCRDsKept(t *testing.T, c client.Client) {
	t.Helper()
	for _, name := range []string{collectorCRD, "instrumentations.opentelemetry.io", "opampbridges.opentelemetry.io", "targetallocators.opentelemetry.io"} {
		crd := getCRD(t, c, name)
		require.Nil(t, crd.GetDeletionTimestamp(), "%s is not being deleted", name)
	}
}

// withTemplate returns a copy of ch whose template name has old replaced by
// new.
func withTemplate(t *testing.T, ch *chartv2.Chart, name, old, replacement string) *chartv2.Chart {
	t.Helper()
	cp := *ch
	cp.Templates = nil
	found := false
	for _, f := range ch.Templates {
		if f.Name == name {
			require.True(t, bytes.Contains(f.Data, []byte(old)), "%s contains %q", name, old)
			g := *f
			g.Data = []byte(strings.Replace(string(f.Data), old, replacement, 1))
			f = &g
			found = true
		}
		cp.Templates = append(cp.Templates, f)
	}
	require.True(t, found, "template %s", name)
	return &cp
}
