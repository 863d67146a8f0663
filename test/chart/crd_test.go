package chart

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// collectorCRD is the CRD whose conversion webhook the operator serves.
const collectorCRD = "opentelemetrycollectors.opentelemetry.io"

// crd returns the rendered CRD called name, failing the test without it.
func (r rendered) crd(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.CRDs {
		if o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "CRD not rendered", "%s", name)
	return nil
}

// crdNames are the names of the rendered CRDs, sorted.
func (r rendered) crdNames() []string {
	var out []string
	for _, o := range r.CRDs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// generatedCRDs are the CRDs controller-gen wrote into config/crd/bases,
// each file's content passed through slim first when slim is not nil.
func generatedCRDs(t testing.TB, slim func(testing.TB, []byte) []byte) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoDir(), "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if slim != nil {
			b = slim(t, b)
		}
		objs, err := decode(string(b))
		require.NoError(t, err, "decode %s", f)
		out = append(out, objs...)
	}
	return out
}

// repoDir is the repository's root.
func repoDir() string { return filepath.Join(chartDir(), "..", "..") }

// crdslim builds hack/crdslim and returns a function that runs it on a CRD,
// as hack/chart-crds.sh does.
func crdslim(t testing.TB) func(testing.TB, []byte) []byte {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "crdslim")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./hack/crdslim")
	build.Dir = repoDir()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build hack/crdslim: %s", out)
	return func(t testing.TB, crd []byte) []byte {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin)
		cmd.Stdin = bytes.NewReader(crd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "crdslim: %s", stderr.String())
		return out
	}
}

// withoutDescriptions returns a copy of the CRD crd whose versions' schemas
// have no description left, at any depth.
func withoutDescriptions(t testing.TB, crd *unstructured.Unstructured) map[string]any {
	t.Helper()
	c := crd.DeepCopy()
	versions, _, err := unstructured.NestedSlice(c.Object, "spec", "versions")
	require.NoError(t, err)
	for _, v := range versions {
		s, _, err := unstructured.NestedMap(v.(map[string]any), "schema", "openAPIV3Schema")
		require.NoError(t, err)
		stripDescriptions(s)
		require.NoError(t, unstructured.SetNestedMap(v.(map[string]any), s, "schema", "openAPIV3Schema"))
	}
	require.NoError(t, unstructured.SetNestedSlice(c.Object, versions, "spec", "versions"))
	return c.Object
}

// stripDescriptions removes the description of the schema s and of the
// schemas below it, by the keywords of JSONSchemaProps that hold schemas
// (never in data: a default or an example keeps its "description" keys).
func stripDescriptions(s any) {
	switch s := s.(type) {
	case []any:
		for _, e := range s {
			stripDescriptions(e)
		}
	case map[string]any:
		delete(s, "description")
		for k, v := range s {
			switch k {
			case "properties", "patternProperties", "definitions", "dependencies":
				m, _ := v.(map[string]any)
				for _, sub := range m {
					stripDescriptions(sub)
				}
			case "items", "additionalProperties", "additionalItems", "not", "allOf", "anyOf", "oneOf":
				stripDescriptions(v)
			}
		}
	}
}

// TestCRDsAreTheGenerated: the chart's CRDs are templates (so that the
// collector CRD can have a conversion webhook and helm upgrade upgrades
// them), and each renders to the CRD controller-gen generated into
// config/crd/bases as hack/crdslim slims it (without the descriptions of the
// Kubernetes types it embeds, which would not fit the release record), plus
// the chart's labels, annotations and conversion webhook and nothing else:
// make manifests wrote the templates (hack/chart-crds.sh), nobody edited
// them. Slimming removes descriptions and nothing else: without any
// description, the chart's CRD is the generated one, so it validates
// exactly what the kustomize install's does.
func TestCRDsAreTheGenerated(t *testing.T) {
	t.Parallel()
	require.Empty(t, loadChart(t).CRDObjects(), "no crds/ directory: Helm installs those once and never upgrades them")
	r := mustRender(t, "shardwise", "shardwise-system", nil)
	generated := generatedCRDs(t, nil)
	slimmed := generatedCRDs(t, crdslim(t))
	require.Len(t, r.CRDs, len(generated), "one template per generated CRD")
	require.Len(t, slimmed, len(generated), "crdslim writes one CRD per CRD")
	for i, full := range generated {
		want := slimmed[i]
		require.Equal(t, full.GetName(), want.GetName())
		got := r.crd(t, want.GetName()).DeepCopy()
		require.Equal(t, map[string]string{
			"helm.sh/chart":                "shardwise-" + loadChart(t).Metadata.Version,
			"app.kubernetes.io/name":       "shardwise",
			"app.kubernetes.io/instance":   "shardwise",
			"app.kubernetes.io/component":  "crds",
			"app.kubernetes.io/version":    loadChart(t).Metadata.AppVersion,
			"app.kubernetes.io/managed-by": "Helm",
		}, got.GetLabels(), want.GetName())
		require.Equal(t, "keep", got.GetAnnotations()["helm.sh/resource-policy"], "helm uninstall leaves %s", want.GetName())
		unstructured.RemoveNestedField(got.Object, "metadata", "labels")
		unstructured.RemoveNestedField(got.Object, "metadata", "annotations", "helm.sh/resource-policy")
		unstructured.RemoveNestedField(got.Object, "metadata", "annotations", "cert-manager.io/inject-ca-from")
		_, hasConversion, _ := unstructured.NestedMap(got.Object, "spec", "conversion")
		require.Equal(t, want.GetName() == collectorCRD, hasConversion, "%s: only the collector CRD converts", want.GetName())
		unstructured.RemoveNestedField(got.Object, "spec", "conversion")
		require.Equal(t, want.Object, got.Object, "%s renders to the generated CRD, slimmed", want.GetName())
		require.Equal(t, withoutDescriptions(t, full), withoutDescriptions(t, got),
			"%s: only descriptions differ from the generated CRD", want.GetName())
	}
}

// TestCRDConversion: the collector CRD's conversion webhook is this
// release's webhook Service at /convert, with its CA from the TLS mode's
// source, for every mode; crds.install=false renders no CRD and leaves the
// conversion CA to whoever installed them.
func TestCRDConversion(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	cert, key := ca.issue(t, "shardwise-webhook-service.obs.svc")
	for _, tc := range []struct {
		name   string
		values map[string]any
		// conversion is whether the collector CRD converts through the
		// webhook; caBundle its rendered CA; injectFrom cert-manager's
		// annotation.
		conversion bool
		caBundle   []byte
		injectFrom string
		// selfInjects is whether the operator's rotator writes its CA into
		// the CRD (and has the RBAC to).
		selfInjects bool
	}{
		{name: "certManager", values: nil, conversion: true, injectFrom: "obs/shardwise-serving-cert"},
		{name: "self", values: values(t, `webhook: {tls: {mode: self}}`), conversion: true, selfInjects: true},
		{name: "provided", values: map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "provided",
			"provided": map[string]any{"cert": string(cert), "key": string(key), "caBundle": string(ca.certPEM)}}}},
			conversion: true, caBundle: ca.certPEM},
		{name: "webhook disabled", values: values(t, `webhook: {enabled: false}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := mustRender(t, "shardwise", "obs", tc.values)
			crd := r.crd(t, collectorCRD)
			conv, _, err := unstructured.NestedMap(crd.Object, "spec", "conversion")
			require.NoError(t, err)
			if !tc.conversion {
				require.Nil(t, conv, "no webhook server, no conversion webhook (strategy None)")
			} else {
				cc := conv["webhook"].(map[string]any)["clientConfig"].(map[string]any)
				require.Equal(t, "Webhook", conv["strategy"])
				require.Equal(t, []any{"v1"}, conv["webhook"].(map[string]any)["conversionReviewVersions"])
				require.Equal(t, map[string]any{"name": "shardwise-webhook-service", "namespace": "obs", "path": "/convert", "port": int64(443)}, cc["service"])
				if tc.caBundle != nil {
					bundle, err := base64.StdEncoding.DecodeString(cc["caBundle"].(string))
					require.NoError(t, err)
					require.Equal(t, tc.caBundle, bundle)
				} else {
					require.NotContains(t, cc, "caBundle", "the CA is injected in the cluster, and helm upgrade leaves it")
				}
				svc := r.find(t, "Service", "shardwise-webhook-service")
				require.Equal(t, "obs", svc.GetNamespace())
				require.Equal(t, int64(443), svc.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"])
			}
			if tc.injectFrom != "" {
				require.Equal(t, tc.injectFrom, crd.GetAnnotations()["cert-manager.io/inject-ca-from"])
				r.find(t, "Certificate", "shardwise-serving-cert")
			} else {
				require.NotContains(t, crd.GetAnnotations(), "cert-manager.io/inject-ca-from")
			}
			for _, other := range r.CRDs {
				if other.GetName() != collectorCRD {
					require.NotContains(t, other.GetAnnotations(), "cert-manager.io/inject-ca-from", other.GetName())
				}
			}
			args := r.args(t, "shardwise-operator")
			require.NotContains(t, args, "--webhook-conversion-ca=false", "the operator's default: inject its CA into the CRD it converts")
			if tc.selfInjects {
				cr := r.find(t, "ClusterRole", "shardwise-operator-crd-ca")
				require.Contains(t, cr.Object["rules"], map[string]any{"apiGroups": []any{"apiextensions.k8s.io"},
					"resources": []any{"customresourcedefinitions"}, "resourceNames": []any{collectorCRD},
					"verbs": []any{"get", "update", "patch"}})
				crb := r.find(t, "ClusterRoleBinding", "shardwise-operator-crd-ca")
				require.Equal(t, "shardwise-operator", crb.Object["subjects"].([]any)[0].(map[string]any)["name"])
			} else {
				require.NotContains(t, r.names(), "ClusterRole/shardwise-operator-crd-ca")
			}

			require.Contains(t, r.Notes, "helm uninstall leaves them")
			if tc.conversion {
				require.Contains(t, r.Notes, "v1alpha1 (deprecated) is converted")
			} else {
				require.Contains(t, r.Notes, "write OpenTelemetryCollector as opentelemetry.io/v1beta1")
			}

			// crds.install=false: no CRD, and the operator keeps out of the
			// CRD's conversion CA (another release or the user owns it).
			vals := values(t, `crds: {install: false}`)
			for k, v := range tc.values {
				vals[k] = v
			}
			r = mustRender(t, "shardwise", "obs", vals)
			require.Empty(t, r.CRDs)
			require.Contains(t, r.Notes, "crds.install is false")
			require.Equal(t, tc.selfInjects, slices.Contains(r.args(t, "shardwise-operator"), "--webhook-conversion-ca=false"))
			require.NotContains(t, r.names(), "ClusterRole/shardwise-operator-crd-ca")
			require.NotContains(t, r.names(), "ClusterRoleBinding/shardwise-operator-crd-ca")
		})
	}
}

// TestChartCRDsScript runs hack/chart-crds.sh on a CRD whose description
// holds a Go template ("{{ .Name }}", as a doc comment may) and that has a
// conversion patch: the rendered CRD has the description as written and the
// conversion webhook. The CRD goes through the slimmer first (here a stand-in
// for hack/crdslim, CRDSLIM, that drops a marked line; TestCRDsAreTheGenerated
// checks the real one's output). A CRD not shaped as controller-gen writes it
// fails the script instead of producing a broken template.
func TestChartCRDsScript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	copyTree(t, filepath.Join(repoDir(), "hack", "chart-crds.sh"), filepath.Join(root, "hack", "chart-crds.sh"))
	copyTree(t, chartDir(), filepath.Join(root, "charts", "shardwise"))
	slim := filepath.Join(root, "slim")
	require.NoError(t, os.WriteFile(slim, []byte("#!/bin/sh\nexec grep -v 'dropped by the slimmer'\n"), 0o755))
	const description = "Widget is rendered with {{ .Name }} and {{- trimmed }}."
	crd := `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    controller-gen.kubebuilder.io/version: v0.23.0
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
  scope: Namespaced
  versions:
  - name: v1
    schema:
      openAPIV3Schema:
        description: "` + description + `"
        properties:
          size:
            description: dropped by the slimmer
            type: integer
        type: object
    served: true
    storage: true
`
	write(t, filepath.Join(root, "config", "crd", "bases", "example.com_widgets.yaml"), crd)
	write(t, filepath.Join(root, "config", "crd", "patches", "webhook_in_widgets.yaml"), "# the conversion patch\n")
	runScript(t, root, slim, true)

	ch, err := loader.Load(filepath.Join(root, "charts", "shardwise"))
	require.NoError(t, err)
	r := mustRenderChart(t, ch, "shardwise", "obs", nil)
	require.Equal(t, []string{"widgets.example.com"}, r.crdNames(), "the script replaced the chart's CRD templates")
	w := r.crd(t, "widgets.example.com")
	versions, _, err := unstructured.NestedSlice(w.Object, "spec", "versions")
	require.NoError(t, err)
	d, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "description")
	require.Equal(t, description, d)
	size, _, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "size")
	require.Equal(t, map[string]any{"type": "integer"}, size, "the script slims each CRD")
	strategy, _, _ := unstructured.NestedString(w.Object, "spec", "conversion", "strategy")
	require.Equal(t, "Webhook", strategy, "a CRD with a conversion patch gets the conversion webhook")
	require.Equal(t, "obs/shardwise-serving-cert", w.GetAnnotations()["cert-manager.io/inject-ca-from"])

	write(t, filepath.Join(root, "config", "crd", "bases", "example.com_widgets.yaml"), strings.Replace(crd, "    controller-gen.kubebuilder.io/version: v0.23.0\n", "", 1))
	require.Contains(t, runScript(t, root, slim, false), "no controller-gen.kubebuilder.io/version annotation")
}

// runScript runs hack/chart-crds.sh in the repository copy at root, with the
// slimmer slim, and returns its output.
func runScript(t *testing.T, root, slim string, succeed bool) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "hack", "chart-crds.sh"))
	cmd.Env = append(os.Environ(), "CRDSLIM="+slim)
	out, err := cmd.CombinedOutput()
	if succeed {
		require.NoError(t, err, "%s", out)
	} else {
		require.Error(t, err, "%s", out)
	}
	return string(out)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// copyTree copies the file or directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	}))
}
