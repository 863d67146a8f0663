// Package chart tests the Helm chart in charts/shardwise with Helm's own Go
// library (helm.sh/helm/v4, pinned in this module's go.mod, which keeps it
// out of the main module): lint, rendering with the default values and with
// each webhook TLS option, a golden file for the default render, the values
// schema refusing bad values, and an install of every rendered object into a
// real kube-apiserver (envtest) with server-side apply, after which the
// operator binary runs with the rendered Deployment's arguments, as the
// chart's ServiceAccount, and must become ready.
//
// The envtest tests need KUBEBUILDER_ASSETS (hack/envtest.sh) and the
// operator binary in SHARDWISE_OPERATOR_BIN; make test sets both. Without
// them those tests skip, unless SHARDWISE_REQUIRE_ENVTEST is set.
//
// Refresh the golden file with go test ./... -update.
package chart
