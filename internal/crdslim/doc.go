// Package crdslim removes from a CustomResourceDefinition the schema
// descriptions that Kubernetes' own types bring with them, and keeps those of
// the API it defines.
//
// controller-gen copies the documentation of every type a CRD embeds into its
// OpenAPI schema: a PodSpec field, a container, a volume or an affinity
// carries the whole of the Kubernetes API reference. In the Helm chart that
// text is most of the release record, which Helm keeps in one Secret of at
// most 1 MiB. The chart's CRDs therefore go through this package
// (hack/crdslim, run by hack/chart-crds.sh); config/crd/bases, which the
// kustomize install applies, keeps every description.
//
// The rule. Each version's schema is walked together with the Go type of the
// CRD's kind (found in a scheme's known types), following JSON names as
// encoding/json and controller-gen do: fields by their json tag, embedded
// and ",inline" structs flattened into their parent, a slice's element under
// items and a map's under additionalProperties. A description is kept when
// the Go code it came from is declared in the own packages (an import path
// prefix): a property's description when the struct that declares the field
// is, and an element's when its type is. Below a value whose Go type is
// declared elsewhere (k8s.io/api, k8s.io/apimachinery, ...), and below a field
// an embedded foreign struct declares (corev1.ServicePort's port, say), no
// description is left.
//
// Invariants: only "description" keys of schemas are removed, so validation
// never changes (test/chart checks that the chart's CRDs equal the generated
// ones once every description is removed from both); a schema property with
// no Go field of that JSON name is an error rather than a guess; the output
// is deterministic (map keys sorted, as controller-gen writes them).
package crdslim
