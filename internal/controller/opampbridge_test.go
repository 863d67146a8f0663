package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
	"github.com/shardwise/shardwise/internal/testenv"
)

// upstreamBridge is the upstream operator's sample OpAMPBridge
// (config/samples/_v1alpha1_opampbridge.yaml), with the consent to plain
// text shardwise asks for a ws:// endpoint (tls.insecure).
const upstreamBridge = `
apiVersion: opentelemetry.io/v1alpha1
kind: OpAMPBridge
metadata:
  name: opampbridge-sample
spec:
  endpoint: ws://opamp-server:4320/v1/opamp
  tls: {insecure: true}
  capabilities:
    AcceptsOpAMPConnectionSettings: true
    AcceptsOtherConnectionSettings: true
    AcceptsRemoteConfig: true
    AcceptsRestartCommand: true
    ReportsEffectiveConfig: true
    ReportsHealth: true
    ReportsOwnLogs: true
    ReportsOwnMetrics: true
    ReportsOwnTraces: true
    ReportsRemoteConfig: true
    ReportsStatus: true
  componentsAllowed:
    receivers:
    - otlp
    processors:
    - memory_limiter
    exporters:
    - debug
`

const bridgeImage = "ghcr.io/shardwise/opamp-bridge:v0.3.0"

// startBridge creates a namespace and runs a manager with the OpAMPBridge
// reconciler, its cache limited to that namespace, until the test ends.
func startBridge(t *testing.T, ns string, clusterWide bool) harness {
	t.Helper()
	h := startClient(t, ns)
	mgr := testenv.NewManager(t, testenv.Require(t, env), ctrl.Options{Scheme: h.scheme, Cache: testenv.CacheIn(ns)})
	r := &controller.OpAMPBridgeReconciler{Client: mgr.GetClient(), Scheme: h.scheme, Recorder: mgr.GetEventRecorder("shardwise-operator"), Image: bridgeImage}
	if clusterWide {
		r.ClusterWideNamespaces = []string{ns}
	}
	require.NoError(t, r.SetupWithManager(mgr, controllerOptions(2)))
	testenv.Run(t, mgr.Start)
	return h
}

// TestOpAMPBridgeSchema: upstream's sample applies unchanged; the inputs
// upstream's webhook refuses are refused by the schema, with a message.
func TestOpAMPBridgeSchema(t *testing.T) {
	t.Parallel()
	const ns = "opamp-schema"
	h := startClient(t, ns)

	_, err := h.createYAML(t, ns, upstreamBridge)
	require.NoError(t, err, "upstream's sample must apply unchanged")

	spec := func(s string) string {
		return "apiVersion: opentelemetry.io/v1alpha1\nkind: OpAMPBridge\nmetadata:\n  name: bad\nspec:\n" + s
	}
	for _, tc := range []struct{ name, doc, msg string }{
		{"empty endpoint", spec("  endpoint: ''\n  capabilities: {ReportsEffectiveConfig: true}\n"), "the OpAMP server endpoint is not specified"},
		{"blank endpoint", spec("  endpoint: '  '\n  capabilities: {ReportsEffectiveConfig: true}\n"), "the OpAMP server endpoint is not specified"},
		{"no endpoint", spec("  capabilities: {ReportsEffectiveConfig: true}\n"), "spec.endpoint: Required value"},
		{"plain text without consent", strings.Replace(upstreamBridge, "  tls: {insecure: true}\n", "", 1), "use wss:// or https://, or set tls.insecure: true"},
		{"http without consent", spec("  endpoint: http://s/v1/opamp\n  capabilities: {ReportsHealth: true}\n  tls: {insecure_skip_verify: true}\n"), "send the collectors' configurations and the bridge's headers in plain text"},
		{"empty capabilities", spec("  endpoint: wss://s/v1/opamp\n  capabilities: {}\n"), "the capabilities supported by the OpAMP bridge are not specified"},
		{"no capabilities", spec("  endpoint: wss://s/v1/opamp\n"), "spec.capabilities: Required value"},
		{"unknown capability", spec("  endpoint: wss://s/v1/opamp\n  capabilities: {AcceptsEverything: true}\n"), "unknown capability"},
		{"ReportsStatus off", spec("  endpoint: wss://s/v1/opamp\n  capabilities: {ReportsStatus: false}\n"), "capabilities.ReportsStatus cannot be false"},
		{"two replicas", spec("  endpoint: wss://s/v1/opamp\n  capabilities: {ReportsHealth: true}\n  replicas: 2\n"), "replicas must not be greater than 1"},
		{"tls both", spec("  endpoint: ws://s/v1/opamp\n  capabilities: {ReportsHealth: true}\n  tls: {insecure: true, insecure_skip_verify: true}\n"), "tls.insecure and tls.insecure_skip_verify cannot both be true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.createYAML(t, ns, tc.doc)
			require.Error(t, err)
			require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}

func (h harness) bridge(t *testing.T, ns, name string) *v1alpha1.OpAMPBridge {
	t.Helper()
	var b v1alpha1.OpAMPBridge
	require.NoError(t, h.client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &b))
	return &b
}

// TestOpAMPBridgeReconcile: the upstream sample becomes a ConfigMap,
// ServiceAccount, Role and RoleBinding, Service and Deployment, each owned by
// the bridge (garbage collection follows these owner references; envtest
// runs no garbage collector, so the test checks the references); the status
// says Ready with the version; an edit rolls the Deployment through the
// config hash.
func TestOpAMPBridgeReconcile(t *testing.T) {
	t.Parallel()
	const ns, name = "opamp-reconcile", "opampbridge-sample"
	h := startBridge(t, ns, false)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, upstreamBridge)
	require.NoError(t, err)

	objName := opampbridge.Name(name)
	objs := []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &appsv1.Deployment{}}
	eventually(t, waitFor, func() error {
		for _, o := range objs {
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, o); err != nil {
				return fmt.Errorf("%T: %w", o, err)
			}
		}
		return nil
	})
	b := h.bridge(t, ns, name)
	for _, o := range objs {
		ref := metav1.GetControllerOf(o)
		require.NotNil(t, ref, "%T has no controller", o)
		require.Equal(t, b.UID, ref.UID, "%T", o)
		require.True(t, ptr.Deref(ref.BlockOwnerDeletion, false), "%T", o)
	}
	var role rbacv1.Role
	h.get(t, ns, objName, &role)
	require.Equal(t, opampbridge.Rules(), role.Rules)
	// Upstream's sample accepts the restart command, which upstream's bridge
	// runs by patching workloads; here it annotates the collector, so the
	// bridge's ServiceAccount holds no rights on workloads.
	sa := "system:serviceaccount:" + ns + ":" + objName
	eventually(t, waitFor, func() error {
		if !h.allowed(t, sa, "patch", "opentelemetrycollectors.opentelemetry.io", ns) {
			return fmt.Errorf("the bridge may not patch collectors yet")
		}
		return nil
	})
	for _, res := range []string{"deployments.apps", "statefulsets.apps", "daemonsets.apps"} {
		require.False(t, h.allowed(t, sa, "patch", res, ns), "the bridge may patch %s", res)
	}

	eventually(t, waitFor, func() error {
		b = h.bridge(t, ns, name)
		c := meta.FindStatusCondition(b.Status.Conditions, "Ready")
		if c == nil || c.Status != metav1.ConditionTrue || b.Status.ObservedGeneration != b.Generation {
			return fmt.Errorf("not ready yet: %+v", b.Status)
		}
		return nil
	})
	require.Equal(t, "0.3.0", b.Status.Version)

	var dep appsv1.Deployment
	h.get(t, ns, objName, &dep)
	hash0 := dep.Spec.Template.Annotations[opampbridge.AnnotationConfigHash]
	require.NotEmpty(t, hash0)
	require.Contains(t, dep.Spec.Template.Spec.Containers[0].Args, "--watch-namespace="+ns)

	// An edit of the configuration rolls the pods.
	h.update(t, b, func() { b.Spec.Endpoint = "wss://opamp.example.com/v1/opamp" })
	eventually(t, waitFor, func() error {
		var cm corev1.ConfigMap
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, &cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[opampbridge.ConfigKey], "wss://opamp.example.com") {
			return fmt.Errorf("config not updated:\n%s", cm.Data[opampbridge.ConfigKey])
		}
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, &dep); err != nil {
			return err
		}
		if dep.Spec.Template.Annotations[opampbridge.AnnotationConfigHash] == hash0 {
			return fmt.Errorf("pod template hash unchanged")
		}
		return nil
	})

	// No OpAMP server for agents unless asked for: no Service, no port.
	err = h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, &corev1.Service{})
	require.True(t, apierrors.IsNotFound(err), "a Service without serveAgents: %v", err)
	// Asked for: the Service and a NetworkPolicy admitting collector pods;
	// turned off again, both go.
	b = h.bridge(t, ns, name)
	h.update(t, b, func() { b.Spec.ServeAgents = true })
	eventually(t, waitFor, func() error {
		if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, &corev1.Service{}); err != nil {
			return err
		}
		return h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, &networkingv1.NetworkPolicy{})
	})
	b = h.bridge(t, ns, name)
	h.update(t, b, func() { b.Spec.ServeAgents = false })
	eventually(t, waitFor, func() error {
		for _, o := range []client.Object{&corev1.Service{}, &networkingv1.NetworkPolicy{}} {
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T still there: %w", o, err)
			}
		}
		return nil
	})

	// A user service account: the operator's own one and its RBAC go.
	h.update(t, b, func() { b.Spec.ServiceAccount = "mine" })
	eventually(t, waitFor, func() error {
		for _, o := range []client.Object{&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: objName}, o)
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T still there: %w", o, err)
			}
		}
		return nil
	})
}

// TestOpAMPBridgeClusterWide: in a namespace the operator's administrator
// opted in, the bridge gets a ClusterRole and binding instead of a Role, no
// namespace restriction, and a finalizer that removes the cluster objects
// when the bridge is deleted.
func TestOpAMPBridgeClusterWide(t *testing.T) {
	t.Parallel()
	const ns, name = "opamp-cluster", "opampbridge-sample"
	h := startBridge(t, ns, true)
	ctx := t.Context()
	_, err := h.createYAML(t, ns, upstreamBridge)
	require.NoError(t, err)
	crName := opampbridge.ClusterRoleName(ns, name)
	eventually(t, waitFor, func() error {
		if err := h.client.Get(ctx, types.NamespacedName{Name: crName}, &rbacv1.ClusterRole{}); err != nil {
			return err
		}
		return h.client.Get(ctx, types.NamespacedName{Name: crName}, &rbacv1.ClusterRoleBinding{})
	})
	var dep appsv1.Deployment
	eventually(t, waitFor, func() error {
		return h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: opampbridge.Name(name)}, &dep)
	})
	require.False(t, slices.ContainsFunc(dep.Spec.Template.Spec.Containers[0].Args, func(a string) bool {
		return strings.HasPrefix(a, "--watch-namespace")
	}))
	err = h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: opampbridge.Name(name)}, &rbacv1.Role{})
	require.True(t, apierrors.IsNotFound(err), "no Role for a cluster-wide bridge: %v", err)
	require.Contains(t, h.bridge(t, ns, name).Finalizers, controller.OpAMPBridgeClusterRBACFinalizer)
	sa := "system:serviceaccount:" + ns + ":" + opampbridge.Name(name)
	for _, res := range []string{"deployments.apps", "statefulsets.apps"} {
		require.False(t, h.allowed(t, sa, "patch", res, "kube-system"), "a cluster-wide bridge may patch %s", res)
	}

	// Its cluster RBAC is watched: a deleted binding and an edited role are
	// put back.
	var cr rbacv1.ClusterRole
	require.NoError(t, h.client.Get(ctx, types.NamespacedName{Name: crName}, &cr))
	cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	require.NoError(t, h.client.Update(ctx, &cr))
	require.NoError(t, h.client.Delete(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: crName}}))
	eventually(t, waitFor, func() error {
		if err := h.client.Get(ctx, types.NamespacedName{Name: crName}, &rbacv1.ClusterRoleBinding{}); err != nil {
			return err
		}
		if err := h.client.Get(ctx, types.NamespacedName{Name: crName}, &cr); err != nil {
			return err
		}
		if !reflect.DeepEqual(cr.Rules, opampbridge.Rules()) {
			return fmt.Errorf("rules not restored: %v", cr.Rules)
		}
		return nil
	})

	require.NoError(t, h.client.Delete(ctx, h.bridge(t, ns, name)))
	eventually(t, waitFor, func() error {
		for _, o := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
			if err := h.client.Get(ctx, types.NamespacedName{Name: crName}, o); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%T still there: %w", o, err)
			}
		}
		err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &v1alpha1.OpAMPBridge{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("bridge still there: %w", err)
		}
		return nil
	})
}

// TestOperatorHoldsBridgeRules: the operator's ClusterRole (generated from
// the +kubebuilder:rbac markers) holds every permission it grants a bridge;
// the API server refuses a Role that grants more than its creator holds.
func TestOperatorHoldsBridgeRules(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(raw, &role))
	holds := func(group, resource, verb string) bool {
		return slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
		})
	}
	for _, r := range opampbridge.Rules() {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					require.True(t, holds(g, res, v), "operator lacks %s %s/%s", v, g, res)
				}
			}
		}
	}
}
