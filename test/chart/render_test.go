package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kubeVersion is the Kubernetes version charts are rendered for: envtest's.
const kubeVersion = "v1.37.2"

// chartDir is charts/shardwise in the repository.
func chartDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "shardwise")
}

func loadChart(t testing.TB) *chartv2.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir())
	require.NoError(t, err, "load chart")
	return ch
}

// rendered is one `helm template` of the chart.
type rendered struct {
	// Manifest is the rendered templates, as Helm prints them.
	Manifest string
	Notes    string
	// Objects are the templates' objects but the CRDs.
	Objects []*unstructured.Unstructured
	// CRDs are the templates' CRDs (templates/crds).
	CRDs []*unstructured.Unstructured
	// Hooks are the hooks' objects (helm.sh/hook), which Helm keeps out of
	// the manifest.
	Hooks []*unstructured.Unstructured
}

// render renders the chart as `helm template <release> charts/shardwise
// -n <namespace> -f values` does, through the same library code.
func render(t testing.TB, release, namespace string, values map[string]any) (rendered, error) {
	t.Helper()
	return renderChart(t, loadChart(t), release, namespace, values)
}

// renderChart renders ch as render does.
func renderChart(t testing.TB, ch *chartv2.Chart, release, namespace string, values map[string]any) (rendered, error) {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = release
	install.Namespace = namespace
	kv, err := common.ParseKubeVersion(kubeVersion)
	require.NoError(t, err)
	install.KubeVersion = kv
	rel, err := install.Run(ch, values)
	if err != nil {
		return rendered{}, err
	}
	r, ok := rel.(*releasev1.Release)
	require.True(t, ok, "release type %T", rel)
	out := rendered{Manifest: r.Manifest, Notes: r.Info.Notes}
	objs, err := decode(r.Manifest)
	require.NoError(t, err, "decode rendered manifest")
	for _, h := range r.Hooks {
		hooks, err := decode(h.Manifest)
		require.NoError(t, err, "decode hook %s", h.Name)
		out.Hooks = append(out.Hooks, hooks...)
	}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			out.CRDs = append(out.CRDs, o)
		} else {
			out.Objects = append(out.Objects, o)
		}
	}
	return out, nil
}

// mustRender is render that fails the test on an error.
func mustRender(t testing.TB, release, namespace string, values map[string]any) rendered {
	t.Helper()
	r, err := render(t, release, namespace, values)
	require.NoError(t, err, "render chart")
	return r
}

// mustRenderChart is renderChart that fails the test on an error.
func mustRenderChart(t testing.TB, ch *chartv2.Chart, release, namespace string, values map[string]any) rendered {
	t.Helper()
	r, err := renderChart(t, ch, release, namespace, values)
	require.NoError(t, err, "render chart")
	return r
}

// decode splits a multi-document YAML stream into objects, skipping empty
// documents.
func decode(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		// Unstructured's decoder keeps integers as int64, as the API does.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// find returns the one rendered object of kind and name, failing the test
// when there is none.
func (r rendered) find(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "object not rendered", "%s %s; rendered: %s", kind, name, strings.Join(r.names(), ", "))
	return nil
}

// names are "Kind/name" of every rendered object.
func (r rendered) names() []string {
	var out []string
	for _, o := range r.Objects {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// container is the operator Deployment's manager container.
func (r rendered) container(t testing.TB, deployment string) map[string]any {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(r.find(t, "Deployment", deployment).Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	require.Len(t, cs, 1)
	return cs[0].(map[string]any)
}

// args are the manager container's arguments.
func (r rendered) args(t testing.TB, deployment string) []string {
	t.Helper()
	args, _, err := unstructured.NestedStringSlice(r.container(t, deployment), "args")
	require.NoError(t, err)
	return args
}

// values parses a YAML values document.
func values(t testing.TB, doc string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(doc), &v))
	if v == nil {
		v = map[string]any{}
	}
	return v
}

// normalize rewrites a manifest so that it is stable across runs: nothing in
// the chart is random, so it only trims trailing spaces.
func normalize(manifest string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(manifest, "\n") {
		fmt.Fprintln(&b, strings.TrimRight(l, " "))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// elideSchemas replaces the body of every "schema:" of a CRD version in a
// normalized manifest with a note, leaving the rest of each CRD (metadata,
// conversion, names, versions, printer columns) as rendered.
func elideSchemas(manifest string) string {
	var b strings.Builder
	skipping := false
	for _, l := range strings.SplitAfter(manifest, "\n") {
		if skipping {
			if strings.HasPrefix(l, "     ") || l == "\n" {
				continue
			}
			skipping = false
		}
		if strings.TrimRight(l, "\n") == "    schema:" {
			b.WriteString("    schema: {} # left out of the golden file: TestCRDsAreTheGenerated compares it with config/crd/bases\n")
			skipping = true
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}
