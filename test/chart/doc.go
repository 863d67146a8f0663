// Package chart tests the Helm chart in charts/shardwise with Helm's own Go
// library (helm.sh/helm/v4, pinned in this module's go.mod, which keeps it
// out of the main module): lint, rendering with the default values and with
// each webhook TLS option, a golden file for the default render (the CRDs'
// schemas left out: the CRD templates are compared with config/crd/bases
// instead), the values schema refusing bad values, and, against a real
// kube-apiserver (envtest):
//   - TestInstall: every rendered object server-side applied, after which
//     the operator binary runs with the rendered Deployment's arguments, as
//     the chart's ServiceAccount, and must become ready; the API server
//     reaches its webhook through the chart's Service and converts a
//     v1alpha1 OpenTelemetryCollector through the chart's CRD;
//   - TestHelmLifecycle: Helm's install, upgrade and uninstall, for what
//     they do to the CRDs and how big the release record is.
//
// The envtest tests need KUBEBUILDER_ASSETS (hack/envtest.sh) and TestInstall
// the operator binary in SHARDWISE_OPERATOR_BIN; make test sets both. Without
// them those tests skip, unless SHARDWISE_REQUIRE_ENVTEST is set.
//
// Refresh the golden file with go test ./... -update.
package chart
