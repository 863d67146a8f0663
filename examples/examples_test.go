package examples_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, filepath.Join(testenv.Root(), "config", "crd", "bases"), testenv.MonitoringCRDs()))
}

// notManifests are the files of examples/ that are not Kubernetes objects:
// the allocator's own config file for make run (internal/allocator tests it).
var notManifests = []string{"allocator.yaml"}

// namespace is where every example lives.
const namespace = "observability"

// doc is one YAML document of an example file.
type doc struct {
	file string // relative to examples/
	raw  []byte
}

func (d doc) String() string {
	var o struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	_ = yaml.Unmarshal(d.raw, &o)
	return d.file + ": " + o.Kind + " " + o.Metadata.Name
}

// exampleDocs returns the documents of every manifest under examples/.
func exampleDocs(t *testing.T) []doc {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(path) == ".yaml" && !slices.Contains(notManifests, path) {
			files = append(files, path)
		}
		return nil
	}))
	require.NotEmpty(t, files)
	var docs []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		ds := splitDocs(t, b)
		require.NotEmpty(t, ds, "%s has no documents", f)
		for _, raw := range ds {
			docs = append(docs, doc{file: f, raw: raw})
		}
	}
	return docs
}

// splitDocs splits a multi-document YAML file, dropping documents that hold
// only comments.
func splitDocs(t *testing.T, b []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, yaml.Unmarshal(d, &m))
		if len(m) > 0 {
			out = append(out, d)
		}
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme, v1alpha1.AddToScheme, monitoringv1.AddToScheme} {
		require.NoError(t, add(s))
	}
	return s
}

// decodeStrict decodes a document into its Go API type, failing on an
// unknown or duplicate field (case-sensitively, as the API server).
func decodeStrict(s *runtime.Scheme, raw []byte) (runtime.Object, error) {
	obj, _, err := serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer().Decode(raw, nil, nil)
	return obj, err
}

// TestExamplesDecodeStrictly decodes every example into our API types, and
// checks that each kind the operator serves has an example.
func TestExamplesDecodeStrictly(t *testing.T) {
	t.Parallel()
	s := newScheme(t)
	var covered []string
	for _, d := range exampleDocs(t) {
		obj, err := decodeStrict(s, d.raw)
		require.NoError(t, err, d.String())
		m, ok := obj.(metav1.Object)
		require.True(t, ok, d.String())
		require.Equal(t, namespace, m.GetNamespace(), "%s: every example lives in namespace %s", d, namespace)
		switch o := obj.(type) {
		case *v1beta1.OpenTelemetryCollector:
			covered = append(covered, "OpenTelemetryCollector/"+string(o.Spec.Mode))
		case *v1alpha1.TargetAllocator:
			covered = append(covered, "TargetAllocator")
			if o.Spec.PrometheusCR.Enabled {
				covered = append(covered, "TargetAllocator/prometheusCR")
			}
		case *v1alpha1.Instrumentation:
			covered = append(covered, "Instrumentation")
		case *v1alpha1.OpAMPBridge:
			covered = append(covered, "OpAMPBridge")
		case *monitoringv1.ServiceMonitor:
			covered = append(covered, "ServiceMonitor")
		}
	}
	for _, want := range []string{
		"OpenTelemetryCollector/statefulset", "OpenTelemetryCollector/deployment",
		"OpenTelemetryCollector/daemonset", "OpenTelemetryCollector/sidecar",
		"TargetAllocator/prometheusCR", "Instrumentation", "OpAMPBridge", "ServiceMonitor",
	} {
		require.Contains(t, covered, want, "no example of %s", want)
	}
}

// TestExamplesBuild runs the operator's manifest builders on every collector
// and target allocator example, with the chart's default settings (no
// cluster-wide grants): each builds its objects without an error.
func TestExamplesBuild(t *testing.T) {
	t.Parallel()
	s := newScheme(t)
	settings := manifests.Settings{CollectorImage: "collector:example", TargetAllocatorImage: "allocator:example"}
	for _, d := range exampleDocs(t) {
		obj, err := decodeStrict(s, d.raw)
		require.NoError(t, err, d.String())
		switch obj.(type) {
		case *v1beta1.OpenTelemetryCollector, *v1alpha1.TargetAllocator:
		default:
			continue
		}
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			switch o := obj.(type) {
			case *v1beta1.OpenTelemetryCollector:
				built, err := manifests.BuildCollector(o, settings, nil)
				require.NoError(t, err)
				for _, b := range built.Objects {
					if ta, ok := b.(*v1alpha1.TargetAllocator); ok {
						_, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: built.Selector}, settings)
						require.NoError(t, err, "its target allocator")
					}
				}
			case *v1alpha1.TargetAllocator:
				_, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: o}, settings)
				require.NoError(t, err)
			}
		})
	}
}

// dryRunApply applies a document with server-side apply in dry-run mode.
func dryRunApply(t *testing.T, c client.Client, raw []byte) error {
	t.Helper()
	var u unstructured.Unstructured
	require.NoError(t, yaml.Unmarshal(raw, &u.Object))
	return c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(&u), client.DryRunAll, client.FieldOwner("shardwise-examples-test"), client.ForceOwnership)
}

// newClient returns a client of the control plane, with the namespace of
// the examples created.
func newClient(t *testing.T) client.Client {
	t.Helper()
	cfg := testenv.Require(t, env)
	c, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(t.Context(), ns)))
	return c
}

// TestExamplesApply applies every example with server-side dry-run on a
// real API server with our CRDs and the monitoring CRDs installed, so the
// CRDs' schemas and validation rules accept them.
func TestExamplesApply(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	for _, d := range exampleDocs(t) {
		t.Run(d.String(), func(t *testing.T) {
			t.Parallel()
			require.NoError(t, dryRunApply(t, c, d.raw))
		})
	}
}

// typos are misspelt fields, each made by replacing from with to (once) in
// file: the strict decoding must refuse them, and so must the API server
// unless the field is in a part of the schema that keeps unknown fields
// (the collector config).
var typos = []struct {
	name, file, from, to string
	serverAccepts        bool
}{
	{"collector spec field", "collector/statefulset.yaml", "  replicas: 3\n", "  replica: 3\n", false},
	{"target allocator field", "collector/statefulset.yaml", "    allocationStrategy: consistent-hashing\n", "    allocationStrategie: consistent-hashing\n", false},
	{"wrong case", "collector/deployment.yaml", "  podDisruptionBudget:\n", "  poddisruptionBudget:\n", false},
	{"pipeline field", "collector/deployment.yaml", "        logs:\n          receivers: [otlp]\n", "        logs:\n          receiver: [otlp]\n", true},
	{"TargetAllocator field", "targetallocator.yaml", "  collectorNotReadyGracePeriod: 30s\n", "  collectorNotReadyGracePeriode: 30s\n", false},
	{"Instrumentation field", "instrumentation.yaml", "  propagators: [tracecontext, baggage]\n", "  propagator: [tracecontext, baggage]\n", false},
	{"OpAMPBridge field", "opampbridge.yaml", "  componentsAllowed:\n", "  componentAllowed:\n", false},
	{"ServiceMonitor field", "servicemonitor.yaml", "      interval: 15s\n", "      intervall: 15s\n", false},
}

// typoDocs returns the documents of a typo case's file with the typo made.
func typoDocs(t *testing.T, file, from, to string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), from), "%s: the text to misspell must occur once", file)
	return splitDocs(t, []byte(strings.Replace(string(b), from, to, 1)))
}

// TestTypoIsRefused checks the checks: an example with a misspelt field
// fails strict decoding with a strict decoding error, and, on a control
// plane, the dry-run apply.
func TestTypoIsRefused(t *testing.T) {
	t.Parallel()
	s := newScheme(t)
	for _, tc := range typos {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var errs []error
			for _, raw := range typoDocs(t, tc.file, tc.from, tc.to) {
				if _, err := decodeStrict(s, raw); err != nil {
					errs = append(errs, err)
				}
			}
			require.Len(t, errs, 1, "exactly the misspelt document fails")
			require.True(t, runtime.IsStrictDecodingError(errs[0]), "not a strict decoding error: %v", errs[0])
			require.ErrorContains(t, errs[0], "unknown field")
		})
	}
}

// TestTypoIsRefusedByServer checks that the API server refuses each typo
// case on its own, so the dry-run apply of TestExamplesApply checks field
// names too.
func TestTypoIsRefusedByServer(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	for _, tc := range typos {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var errs []error
			for _, raw := range typoDocs(t, tc.file, tc.from, tc.to) {
				if err := dryRunApply(t, c, raw); err != nil {
					errs = append(errs, err)
				}
			}
			if tc.serverAccepts {
				require.Empty(t, errs, "the schema keeps unknown fields here; only the strict decoding finds the typo")
				return
			}
			require.Len(t, errs, 1, "exactly the misspelt document fails")
			require.ErrorContains(t, errs[0], strings.TrimSpace(strings.SplitN(tc.to, ":", 2)[0]))
		})
	}
}
