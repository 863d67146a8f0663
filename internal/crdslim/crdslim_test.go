package crdslim

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
)

// The test CRD's Go types: declared in this package (the own one in these
// tests), with Kubernetes types among their fields.
type (
	widget struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata,omitempty"`
		Spec              widgetSpec `json:"spec"`
	}
	widgetSpec struct {
		Size        *int32                           `json:"size,omitempty"`
		Resources   corev1.ResourceRequirements      `json:"resources"`
		Parts       []part                           `json:"parts,omitempty"`
		Grid        [][]*part                        `json:"grid,omitempty"`
		Tolerations [][]corev1.Toleration            `json:"tolerations,omitempty"`
		ByName      map[string]part                  `json:"byName,omitempty"`
		Selectors   map[string]*metav1.LabelSelector `json:"selectors,omitempty"`
		Hidden      string                           `json:"-"`
		NoTag       string                           // encoding/json names it NoTag
		widgetPort  `json:",inline"`
	}
	// widgetPort is inlined into widgetSpec and inlines a Kubernetes type.
	widgetPort struct {
		corev1.ServicePort `json:",inline"`
		HostPort           int32 `json:"hostPort,omitempty"`
	}
	part struct {
		Name     string           `json:"name"`
		Affinity *corev1.Affinity `json:"affinity,omitempty"`
	}
)

const (
	testGroup = "example.com"
	// testOwn is this package: its types are the own ones here.
	testOwn = "github.com/shardwise/shardwise/internal/crdslim"
)

func testSlimmer() *Slimmer {
	return New(map[schema.GroupVersionKind]reflect.Type{
		{Group: testGroup, Version: "v1", Kind: "Widget"}: reflect.TypeFor[widget](),
	}, testOwn+"/")
}

// widgetCRD is the Widget CRD in YAML, of the kind kind, whose spec property
// has the schema spec (YAML indented by 12 spaces, under the property).
func widgetCRD(kind, spec string) []byte {
	return []byte(`---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: ` + kind + `
    plural: widgets
  scope: Namespaced
  versions:
  - additionalPrinterColumns:
    - description: a printer column's description is not a schema's
      jsonPath: .spec.size
      name: Size
      type: integer
    name: v1
    schema:
      openAPIV3Schema:
        description: Widget is ours.
        properties:
          apiVersion:
            description: APIVersion defines the versioned schema (metav1.TypeMeta).
            type: string
          metadata:
            description: metadata is ours, ObjectMeta's fields are not.
            properties:
              name:
                description: Name must be unique within a namespace.
                type: string
            type: object
          spec:
` + spec + `
        type: object
    served: true
    storage: true
`)
}

// specOf returns the schema of spec in the CRD crd, and checks what every
// case keeps and drops outside it.
func specOf(t *testing.T, crd []byte) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(crd, &obj))
	version := obj["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	require.Equal(t, "a printer column's description is not a schema's",
		version["additionalPrinterColumns"].([]any)[0].(map[string]any)["description"])
	root := version["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
	require.Equal(t, "Widget is ours.", root["description"])
	props := root["properties"].(map[string]any)
	require.Equal(t, map[string]any{"type": "string"}, props["apiVersion"], "declared by metav1.TypeMeta")
	require.Equal(t, map[string]any{
		"description": "metadata is ours, ObjectMeta's fields are not.",
		"type":        "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
	}, props["metadata"])
	return props["spec"].(map[string]any)
}

// slimCases are widget specs and what Slim leaves of them.
var slimCases = []struct {
	name string
	// spec is the schema of the widget's spec; want the slimmed one.
	spec, want string
}{{
	name: "an own field keeps its description, a core type's fields lose theirs",
	spec: `
            description: spec is ours.
            type: object
            properties:
              size:
                description: size is ours.
                format: int32
                type: integer
              resources:
                description: resources is ours, ResourceRequirements' fields are not.
                type: object
                properties:
                  limits:
                    description: Limits describes the maximum amount of compute resources allowed.
                    type: object
                    additionalProperties:
                      anyOf:
                      - type: integer
                      - type: string
                      x-kubernetes-int-or-string: true
                  claims:
                    description: Claims lists the names of resources.
                    items:
                      description: ResourceClaim references one entry in PodSpec.ResourceClaims.
                      properties:
                        name:
                          description: Name must match the name of one entry.
                          default: {description: "a default is data, not a schema"}
                          type: string
                      type: object
                    type: array`,
	want: `
            description: spec is ours.
            type: object
            properties:
              size:
                description: size is ours.
                format: int32
                type: integer
              resources:
                description: resources is ours, ResourceRequirements' fields are not.
                type: object
                properties:
                  limits:
                    type: object
                    additionalProperties:
                      anyOf:
                      - type: integer
                      - type: string
                      x-kubernetes-int-or-string: true
                  claims:
                    items:
                      properties:
                        name:
                          default: {description: "a default is data, not a schema"}
                          type: string
                      type: object
                    type: array`,
}, {
	name: "a field an inlined core type declares loses its description, one of the own struct that inlines it keeps it",
	spec: `
            properties:
              hostPort:
                description: hostPort is ours.
                type: integer
              port:
                description: The port that will be exposed by this service.
                type: integer
              targetPort:
                anyOf:
                - type: integer
                - type: string
                description: Number or name of the port to access on the pods.
                x-kubernetes-int-or-string: true
              NoTag:
                description: NoTag has no json tag.
                type: string
            type: object`,
	want: `
            properties:
              hostPort:
                description: hostPort is ours.
                type: integer
              port:
                type: integer
              targetPort:
                anyOf:
                - type: integer
                - type: string
                x-kubernetes-int-or-string: true
              NoTag:
                description: NoTag has no json tag.
                type: string
            type: object`,
}, {
	name: "nested arrays: own elements keep their descriptions, core elements lose theirs",
	spec: `
            properties:
              parts:
                description: parts are ours.
                items:
                  description: part is ours.
                  properties:
                    name:
                      description: name is ours.
                      type: string
                    affinity:
                      description: affinity is ours.
                      properties:
                        nodeAffinity:
                          description: Describes node affinity scheduling rules for the pod.
                          type: object
                      type: object
                  type: object
                type: array
              grid:
                description: grid is ours.
                items:
                  items:
                    description: part is ours.
                    properties:
                      name:
                        description: name is ours.
                        type: string
                    type: object
                  type: array
                type: array
              tolerations:
                description: tolerations is ours.
                items:
                  items:
                    description: The pod this Toleration is attached to tolerates any taint that matches.
                    properties:
                      key:
                        description: Key is the taint key that the toleration applies to.
                        type: string
                    type: object
                  type: array
                type: array
            type: object`,
	want: `
            properties:
              parts:
                description: parts are ours.
                items:
                  description: part is ours.
                  properties:
                    name:
                      description: name is ours.
                      type: string
                    affinity:
                      description: affinity is ours.
                      properties:
                        nodeAffinity:
                          type: object
                      type: object
                  type: object
                type: array
              grid:
                description: grid is ours.
                items:
                  items:
                    description: part is ours.
                    properties:
                      name:
                        description: name is ours.
                        type: string
                    type: object
                  type: array
                type: array
              tolerations:
                description: tolerations is ours.
                items:
                  items:
                    properties:
                      key:
                        type: string
                    type: object
                  type: array
                type: array
            type: object`,
}, {
	name: "additionalProperties: own values keep their descriptions, core values lose theirs",
	spec: `
            properties:
              byName:
                additionalProperties:
                  description: part is ours.
                  properties:
                    name:
                      description: name is ours.
                      type: string
                  type: object
                description: byName is ours.
                type: object
              selectors:
                additionalProperties:
                  description: A label selector is a label query over a set of resources.
                  properties:
                    matchLabels:
                      additionalProperties:
                        type: string
                      description: matchLabels is a map of {key,value} pairs.
                      type: object
                  type: object
                description: selectors is ours.
                type: object
            type: object`,
	want: `
            properties:
              byName:
                additionalProperties:
                  description: part is ours.
                  properties:
                    name:
                      description: name is ours.
                      type: string
                  type: object
                description: byName is ours.
                type: object
              selectors:
                additionalProperties:
                  properties:
                    matchLabels:
                      additionalProperties:
                        type: string
                      type: object
                  type: object
                description: selectors is ours.
                type: object
            type: object`,
}}

func TestSlim(t *testing.T) {
	t.Parallel()
	for _, tc := range slimCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := testSlimmer().Slim(widgetCRD("Widget", tc.spec))
			require.NoError(t, err)
			var want map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tc.want), &want))
			require.Equal(t, want, specOf(t, out))
			again, err := testSlimmer().Slim(out)
			require.NoError(t, err)
			require.Equal(t, string(out), string(again), "slimming is idempotent")
		})
	}
}

func TestSlimRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		crd  []byte
		err  string
	}{
		{name: "a property without a Go field", err: `.spec.color: crdslim.widgetSpec has no field of that JSON name`,
			crd: widgetCRD("Widget", "            properties: {color: {type: string}}\n            type: object")},
		{name: "a field json:\"-\" hides", err: `.spec.Hidden: crdslim.widgetSpec has no field`,
			crd: widgetCRD("Widget", "            properties: {Hidden: {type: string}}\n            type: object")},
		{name: "a schema nested under a scalar", err: `.spec.size: the schema nests schemas under the Go int32`,
			crd: widgetCRD("Widget", "            properties: {size: {items: {type: string}}}\n            type: object")},
		{name: "a kind without a Go type", err: `example.com/v1, Kind=Gadget: no Go type`,
			crd: widgetCRD("Gadget", "            type: object")},
		{name: "not a CRD", err: "not an apiextensions.k8s.io/v1 CustomResourceDefinition",
			crd: []byte("apiVersion: v1\nkind: ConfigMap\n")},
		{name: "not YAML", err: "decode CRD", crd: []byte("{")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := testSlimmer().Slim(tc.crd)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestSlimGenerated slims the CRDs controller-gen generated from the apis
// packages: the output is the input with descriptions removed and nothing
// else (byte for byte, the encoding is controller-gen's), our own types'
// descriptions are kept and no Kubernetes reference text is left.
func TestSlimGenerated(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	s := New(scheme.AllKnownTypes(), "github.com/shardwise/shardwise/apis")
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(f)
			require.NoError(t, err)
			out, err := s.Slim(in)
			require.NoError(t, err)
			require.Less(t, len(out), len(in)/2, "most of a generated CRD is Kubernetes' documentation")
			require.NotContains(t, string(out), "More info: https://", "Kubernetes' reference text")
			require.Contains(t, string(out), "description:", "our own descriptions")
			var got, want map[string]any
			require.NoError(t, yaml.Unmarshal(in, &want, useNumber))
			require.NoError(t, yaml.Unmarshal(out, &got, useNumber))
			for _, crd := range []map[string]any{got, want} {
				for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
					stripAll(v.(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any))
				}
			}
			require.Equal(t, want, got, "only descriptions differ")
		})
	}
}
