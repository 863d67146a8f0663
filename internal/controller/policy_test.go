package controller_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/testenv"
)

// installTenantRightsPolicy creates the ValidatingAdmissionPolicy and its
// binding exactly as config/policy ships them (the chart copies the same
// file).
func installTenantRightsPolicy(t *testing.T, h harness) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "policy", "tenant-rights.yaml"))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, into := range []any{&policy, &binding} {
		require.NoError(t, dec.Decode(into))
	}
	var rest unstructured.Unstructured
	require.ErrorIs(t, dec.Decode(&rest), io.EOF, "the file holds the policy and its binding only")
	for _, obj := range []client.Object{&policy, &binding} {
		if err := h.client.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
}

// TestTenantRightsPolicy: a tenant who may create collectors and
// TargetAllocators in its namespace, and nothing else, cannot get an Ingress,
// a NetworkPolicy or a PodDisruptionBudget through them; granted the right to
// create the kind itself, it can. An update that leaves such a field as it
// was is not checked again. Without the policy every refused case below is
// admitted (the operator would create the object with its own rights).
func TestTenantRightsPolicy(t *testing.T) {
	t.Parallel()
	const ns, tenant = "tenant-rights", "tenant-rights-user"
	cfg := testenv.Require(t, env)
	admin := startClient(t, ns)
	ctx := t.Context()
	installTenantRightsPolicy(t, admin)
	require.NoError(t, admin.client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"opentelemetry.io"}, Resources: []string{"opentelemetrycollectors", "targetallocators", "instrumentations"},
			Verbs: []string{"create", "get", "list", "watch", "update", "patch"},
		}},
	}))
	require.NoError(t, admin.client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}},
	}))
	th := harness{client: testenv.Client(t, impersonate(cfg, tenant), admin.scheme), scheme: admin.scheme}

	const collector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: %s
spec:
  mode: %s
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
%s`
	cases := []struct {
		name, doc, needs string
		grant            rbacv1.PolicyRule
	}{
		{"ingress", fmt.Sprintf(collector, "ingress", "deployment", "  ingress: {type: ingress, hostname: collector.example.com}\n"),
			"ingresses.networking.k8s.io", rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"create"}}},
		{"network-policy", fmt.Sprintf(collector, "network-policy", "deployment", "  networkPolicy: {enabled: true}\n"),
			"networkpolicies.networking.k8s.io", rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create"}}},
		{"pdb", fmt.Sprintf(collector, "pdb", "deployment", "  podDisruptionBudget: {maxUnavailable: 0}\n"),
			"poddisruptionbudgets.policy", rbacv1.PolicyRule{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"create"}}},
		{"allocator-pdb", fmt.Sprintf(collector, "allocator-pdb", "statefulset", "  targetAllocator: {enabled: true, podDisruptionBudget: {maxUnavailable: 0}}\n"),
			"poddisruptionbudgets.policy", rbacv1.PolicyRule{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"create"}}},
		{"targetallocator-pdb", `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: targetallocator-pdb
spec:
  podDisruptionBudget: {minAvailable: 1}
`, "poddisruptionbudgets.policy", rbacv1.PolicyRule{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"create"}}},
		{"v1alpha1-ingress", `
apiVersion: opentelemetry.io/v1alpha1
kind: OpenTelemetryCollector
metadata:
  name: v1alpha1-ingress
spec:
  mode: deployment
  config: |
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
  ingress: {type: ingress, hostname: collector.example.com}
`, "ingresses.networking.k8s.io", rbacv1.PolicyRule{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"create"}}},
		{"restart-uninstrumented", `
apiVersion: opentelemetry.io/v1alpha1
kind: Instrumentation
metadata:
  name: restart-uninstrumented
  annotations: {instrumentation.shardwise.io/restart-uninstrumented: "true"}
spec:
  exporter: {endpoint: "http://collector:4318"}
`, "patch deployments.apps", rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"patch"}}},
	}

	// The plain collector needs no further right; it also shows the tenant's
	// own rights are in place before anything is expected to be refused.
	_, err := th.createYAML(t, ns, fmt.Sprintf(collector, "plain", "deployment", ""))
	require.NoError(t, err)

	// The API server compiles a new policy and learns of its binding
	// asynchronously: wait until the first case is refused.
	eventually(t, waitFor, func() error {
		_, err := th.createYAML(t, ns, cases[0].doc)
		if err == nil {
			require.NoError(t, admin.client.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "opentelemetry.io/v1beta1", "kind": "OpenTelemetryCollector",
				"metadata": map[string]any{"namespace": ns, "name": cases[0].name},
			}}))
			return errors.New("the policy does not refuse yet")
		}
		return nil
	})

	for _, tc := range cases {
		_, err := th.createYAML(t, ns, tc.doc)
		require.Error(t, err, "%s: refused without the right to create %s", tc.name, tc.needs)
		require.True(t, apierrors.IsInvalid(err) || apierrors.IsForbidden(err), "%s: %v", tc.name, err)
		verb := "create "
		if strings.HasPrefix(tc.needs, "patch ") {
			verb = ""
		}
		require.ErrorContains(t, err, "may not "+verb+tc.needs)
		require.ErrorContains(t, err, tenant)
	}

	// Granted each kind, the same requests are admitted.
	var grants []rbacv1.PolicyRule
	for _, tc := range cases {
		grants = append(grants, tc.grant)
	}
	require.NoError(t, admin.client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-kinds"}, Rules: grants}))
	require.NoError(t, admin.client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-kinds"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant-kinds"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}},
	}))
	for _, tc := range cases {
		eventually(t, waitFor, func() error {
			_, err := th.createYAML(t, ns, tc.doc)
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}

	// Without the rights again, an update that keeps the budget as it is
	// passes; one that changes it is refused.
	require.NoError(t, admin.client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-kinds"}}))
	pdb := &unstructured.Unstructured{}
	pdb.SetAPIVersion("opentelemetry.io/v1beta1")
	pdb.SetKind("OpenTelemetryCollector")
	eventually(t, waitFor, func() error {
		if err := th.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pdb"}, pdb); err != nil {
			return err
		}
		require.NoError(t, unstructured.SetNestedField(pdb.Object, int64(1), "spec", "podDisruptionBudget", "maxUnavailable"))
		err := th.client.Update(ctx, pdb)
		if err == nil {
			return errors.New("the revoked right is still in effect")
		}
		require.ErrorContains(t, err, "may not create poddisruptionbudgets.policy")
		return nil
	})
	require.NoError(t, th.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pdb"}, pdb))
	require.NoError(t, unstructured.SetNestedField(pdb.Object, int64(2), "spec", "replicas"))
	require.NoError(t, th.client.Update(ctx, pdb), "an update that keeps the budget needs no right to create one")
}
