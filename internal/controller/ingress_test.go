package controller_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/manifests"
)

// TestIngress applies upstream's e2e manifests tests/e2e/ingress and
// tests/e2e/ingress-subdomains unchanged: each gets the Ingress upstream's
// assert expects, routing to ports the collector Service has; applying
// upstream's 01-remove-ingress.yaml (ingress: ~) prunes it. The schema
// refuses what upstream refuses, and type route.
func TestIngress(t *testing.T) {
	t.Parallel()
	ns := "ingress"
	h := start(t, ns)
	ctx := t.Context()
	for _, tc := range []struct {
		file, name string
		hosts      []string
		paths      []string
	}{
		{"ingress.yaml", "otel-simplest", []string{"example.com"}, []string{"/otlp-grpc", "/otlp-http"}},
		{"ingress-subdomains.yaml", "simplest", []string{"otlp-grpc.test.otel", "otlp-http.test.otel"}, []string{"/", "/"}},
	} {
		_, err := h.createYAML(t, ns, upstreamManifest(t, tc.file))
		require.NoError(t, err)
		c := h.waitReady(t, ns, tc.name, metav1.ConditionTrue)
		var ing networkingv1.Ingress
		h.get(t, ns, tc.name+"-ingress", &ing)
		requireControlledBy(t, &ing, c)
		require.Equal(t, map[string]string{"something.com": "true"}, ing.Annotations)
		var svc = manifests.CollectorService(tc.name)
		var hosts, paths []string
		for _, r := range ing.Spec.Rules {
			hosts = append(hosts, r.Host)
			for _, p := range r.HTTP.Paths {
				paths = append(paths, p.Path)
				require.Equal(t, networkingv1.PathTypePrefix, *p.PathType)
				require.Equal(t, svc, p.Backend.Service.Name)
			}
		}
		require.Equal(t, tc.hosts, hosts, tc.file)
		require.Equal(t, tc.paths, paths, tc.file)
	}

	// Upstream's next step, as kubectl replace would apply it: the manifest
	// with ingress: ~ removes the Ingress.
	removed := []byte(upstreamManifest(t, "ingress-removed.yaml"))
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(removed, &u.Object))
	u.SetNamespace(ns)
	h.update(t, u, func() {
		rv := u.GetResourceVersion()
		u.Object = nil
		require.NoError(t, yaml.Unmarshal(removed, &u.Object))
		u.SetNamespace(ns)
		u.SetResourceVersion(rv)
	})
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "otel-simplest-ingress"}, &networkingv1.Ingress{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("ingress still there: %w", err)
	})

	for i, tc := range []struct{ name, from, to, want string }{
		{"sidecar", "  mode: deployment\n", "  mode: sidecar\n", "mode is set to sidecar, which does not support ingress"},
		{"route", "    type: ingress\n", "    type: route\n", "ingress.type route creates OpenShift Routes"},
		{"subdomain without hostname", "    hostname: \"example.com\"\n", "    ruleType: subdomain\n", "a valid Ingress hostname has to be defined for subdomain ruleType"},
		{"subdomain on any host", "    hostname: \"example.com\"\n", "    ruleType: subdomain\n    hostname: \"*\"\n", "a valid Ingress hostname has to be defined for subdomain ruleType"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(upstreamManifest(t, "ingress.yaml"), tc.from, tc.to, 1)
			require.NotEqual(t, upstreamManifest(t, "ingress.yaml"), doc)
			doc = strings.Replace(doc, "name: otel-simplest", fmt.Sprintf("name: refused-%d", i), 1)
			_, err := h.createYAML(t, ns, doc)
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want a schema rejection, got %v", err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestNetworkPolicy checks that networkPolicy.enabled creates a
// NetworkPolicy admitting the collector container's ports, each with its
// protocol, and that disabling it prunes the policy.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	ns := "networkpolicy"
	h := start(t, ns)
	ctx := t.Context()
	doc := strings.Replace(upstreamManifest(t, "smoke-simplest.yaml"), "spec:\n", "spec:\n  networkPolicy:\n    enabled: true\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	c := h.waitReady(t, ns, "simplest", metav1.ConditionTrue)
	var np networkingv1.NetworkPolicy
	h.get(t, ns, manifests.NetworkPolicyName("simplest"), &np)
	requireControlledBy(t, &np, c)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
	var d appsv1.Deployment
	h.get(t, ns, manifests.CollectorName("simplest"), &d)
	require.Equal(t, d.Spec.Template.Labels, labelsMatching(d.Spec.Template.Labels, np.Spec.PodSelector.MatchLabels), "the policy selects the collector pods")
	var want, got []string
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		want = append(want, fmt.Sprintf("%s/%d", p.Protocol, p.ContainerPort))
	}
	require.Len(t, np.Spec.Ingress, 1)
	for _, p := range np.Spec.Ingress[0].Ports {
		got = append(got, fmt.Sprintf("%s/%d", *p.Protocol, p.Port.IntVal))
	}
	require.Equal(t, want, got)

	h.update(t, c, func() { c.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	eventually(t, waitFor, func() error {
		err := h.client.Get(ctx, client.ObjectKeyFromObject(&np), &networkingv1.NetworkPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("network policy still there: %w", err)
	})
}

// labelsMatching returns labels when selector matches them, nil otherwise.
func labelsMatching(labels, selector map[string]string) map[string]string {
	for k, v := range selector {
		if labels[k] != v {
			return nil
		}
	}
	return labels
}
