package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/testenv"
)

// installRBAC creates a ClusterRole from a file of config/rbac under the
// given name (the file's own name when empty), ignoring AlreadyExists.
func installRBAC(t *testing.T, h harness, file, name string) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", file))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(b, &role))
	if name != "" {
		role.Name = name
	}
	if err := h.client.Create(t.Context(), &role); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	return &role
}

func impersonate(cfg *rest.Config, user string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	return c
}

// allowed asks the API server whether the service account user may do verb
// on resource (resource.group for a named group) in ns.
func (h harness) allowed(t *testing.T, user, verb, resource, ns string) bool {
	t.Helper()
	resource, group, _ := strings.Cut(resource, ".")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + strings.Split(user, ":")[2], "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group, Resource: resource},
	}}
	require.NoError(t, h.client.Create(t.Context(), sar))
	return sar.Status.Allowed
}

// TestTenantCannotReadOtherNamespacesSecrets runs the operator as a user
// holding exactly the generated config/rbac/role.yaml, and a tenant who may
// only create collectors and allocators in namespace team. Whatever the
// tenant asks for, the allocator's ServiceAccount cannot list or get Secrets
// in kube-system: the spec is refused with a condition and a Warning event
// naming the flag. What it may have (its own namespace) is granted, through
// the operator's RBAC, proving role.yaml suffices.
func TestTenantCannotReadOtherNamespacesSecrets(t *testing.T) {
	t.Parallel()
	const ns, operatorUser, tenant = "team", "shardwise-operator-under-test", "tenant"
	cfg := testenv.Require(t, env)
	admin := startClient(t)
	role := installRBAC(t, admin, "role.yaml", "shardwise-operator-under-test")
	installRBAC(t, admin, "targetallocator_secret_reader.yaml", "")
	ctx := t.Context()
	require.NoError(t, admin.client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: operatorUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: operatorUser}},
	}))
	h := startWith(t, managerOptions{namespaces: []string{ns}, config: impersonate(cfg, operatorUser)})
	require.NoError(t, h.client.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"opentelemetry.io"}, Resources: []string{"opentelemetrycollectors", "targetallocators"},
			Verbs: []string{"create", "get", "list", "watch", "update", "patch"},
		}},
	}))
	require.NoError(t, h.client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenant}},
	}))
	tenantClient, err := client.New(impersonate(cfg, tenant), client.Options{Scheme: h.scheme})
	require.NoError(t, err)
	th := harness{client: tenantClient, scheme: h.scheme}

	for _, tc := range []struct {
		name, doc string
		refused   bool
	}{
		{"secrets-of-kube-system", `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: secrets-of-kube-system
spec:
  prometheusCR:
    enabled: true
    allowNamespaces: [team]
    secretNamespaces: [kube-system]
`, true},
		{"every-namespace", `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: every-namespace
spec:
  prometheusCR:
    enabled: true
    serviceMonitorSelector: {}
`, true},
		{"monitors-of-kube-system", `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: monitors-of-kube-system
spec:
  prometheusCR:
    enabled: true
    allowNamespaces: [team, kube-system]
`, true},
		{"collector-with-ta", strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    prometheusCR:\n      enabled: true\n      secretNamespaces: [kube-system]\n", 1), true},
		{"own-namespace", `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: own-namespace
spec:
  prometheusCR:
    enabled: true
    allowNamespaces: [team]
`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := th.createYAML(t, ns, tc.doc)
			require.NoError(t, err, "the tenant may create it")
			var ta v1alpha1.TargetAllocator
			eventually(t, waitFor, func() error {
				if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: tc.name}, &ta); err != nil {
					return err
				}
				_, err := readyCondition(ta.Status.Conditions, ta.Generation)
				return err
			})
			cond := meta.FindStatusCondition(ta.Status.Conditions, "Ready")
			sa := "system:serviceaccount:" + ns + ":" + tc.name + "-targetallocator"
			for _, verb := range []string{"list", "get", "watch"} {
				require.False(t, h.allowed(t, sa, verb, "secrets", "kube-system"), "%s %s secrets in kube-system", sa, verb)
			}
			require.False(t, h.allowed(t, sa, "list", "secrets", ns), "never list Secrets, even in its own namespace")
			if tc.refused {
				require.Equal(t, metav1.ConditionFalse, cond.Status, cond.Message)
				require.Equal(t, "GrantNotAllowed", cond.Reason)
				require.Contains(t, cond.Message, "--target-allocator-cluster-wide-namespaces")
				eventually(t, waitFor, func() error {
					var list eventsv1.EventList
					if err := h.client.List(ctx, &list, client.InNamespace(ns)); err != nil {
						return err
					}
					for _, e := range list.Items {
						if e.Regarding.Name == tc.name && e.Type == "Warning" && e.Reason == "GrantNotAllowed" && strings.Contains(e.Note, "--target-allocator-cluster-wide-namespaces") {
							return nil
						}
					}
					return fmt.Errorf("no GrantNotAllowed Warning event on %s yet", tc.name)
				})
				return
			}
			require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
			require.True(t, h.allowed(t, sa, "get", "secrets", ns), "the allocator gets Secrets of its own namespace")
			require.True(t, h.allowed(t, sa, "list", "servicemonitors.monitoring.coreos.com", ns))
			require.True(t, h.allowed(t, sa, "create", "events", ns))
			require.True(t, h.allowed(t, sa, "list", "namespaces", ""))
			require.False(t, h.allowed(t, sa, "list", "pods", "kube-system"))
		})
	}
}

// TestSecretReaderRoleMissingIsReported: an allocator bound to the secret
// reader ClusterRole while the role is not installed reports it (Ready=False
// and a Warning event), and is Ready once the role is installed. Not parallel:
// it removes the cluster-wide role the other tests install.
func TestSecretReaderRoleMissingIsReported(t *testing.T) {
	ns := "secret-reader-missing"
	h := start(t, ns)
	ctx := t.Context()
	err := h.client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "shardwise-targetallocator-secret-reader"}})
	require.NoError(t, client.IgnoreNotFound(err))
	_, err = h.createYAML(t, ns, "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: r}\nspec: {prometheusCR: {enabled: true, allowNamespaces: ["+ns+"]}}\n")
	require.NoError(t, err)
	ready := func(want metav1.ConditionStatus) *metav1.Condition {
		var cond *metav1.Condition
		eventually(t, waitFor, func() error {
			var ta v1alpha1.TargetAllocator
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "r"}, &ta); err != nil {
				return err
			}
			c, err := readyCondition(ta.Status.Conditions, ta.Generation)
			if err != nil {
				return err
			}
			if c.Status != want {
				return fmt.Errorf("Ready=%s (%s), want %s", c.Status, c.Reason, want)
			}
			cond = c
			return nil
		})
		return cond
	}
	cond := ready(metav1.ConditionFalse)
	require.Equal(t, "SecretReaderRoleMissing", cond.Reason)
	require.Contains(t, cond.Message, "targetallocator_secret_reader.yaml")
	requireWarningEvent(t, h, ns, "r", "SecretReaderRoleMissing")
	installRBAC(t, h, "targetallocator_secret_reader.yaml", "")
	ready(metav1.ConditionTrue)
}

// TestNamespaceOptIn: a tenant's allocator that reads another namespace is
// refused until that namespace carries readers.shardwise.io/<tenant>=true
// (which only whoever may update namespaces can set), granted while it does,
// and refused again, its Role there removed, once the label is gone.
func TestNamespaceOptIn(t *testing.T) {
	t.Parallel()
	const tenant, shared = "optin-tenant", "optin-shared"
	h := startWith(t, managerOptions{namespaces: []string{tenant, shared}})
	installRBAC(t, h, "targetallocator_secret_reader.yaml", "")
	ctx := t.Context()
	_, err := h.createYAML(t, tenant, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: reader
spec:
  prometheusCR:
    enabled: true
    allowNamespaces: [optin-tenant, optin-shared]
`)
	require.NoError(t, err)
	sa := "system:serviceaccount:" + tenant + ":reader-targetallocator"
	ready := func(want metav1.ConditionStatus, reason string) {
		t.Helper()
		eventually(t, waitFor, func() error {
			var ta v1alpha1.TargetAllocator
			if err := h.client.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "reader"}, &ta); err != nil {
				return err
			}
			c, err := readyCondition(ta.Status.Conditions, ta.Generation)
			if err != nil {
				return err
			}
			if c.Status != want || (reason != "" && c.Reason != reason) {
				return fmt.Errorf("Ready=%s %s (%s), want %s %s", c.Status, c.Reason, c.Message, want, reason)
			}
			return nil
		})
	}
	ready(metav1.ConditionFalse, "GrantNotAllowed")
	require.False(t, h.allowed(t, sa, "list", "servicemonitors.monitoring.coreos.com", shared))

	setLabel := func(value *string) {
		var ns corev1.Namespace
		require.NoError(t, h.client.Get(ctx, types.NamespacedName{Name: shared}, &ns))
		h.update(t, &ns, func() {
			if value == nil {
				delete(ns.Labels, "readers.shardwise.io/"+tenant)
				return
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels["readers.shardwise.io/"+tenant] = *value
		})
	}
	// Another namespace's readers do not count.
	other := "true"
	var ns corev1.Namespace
	require.NoError(t, h.client.Get(ctx, types.NamespacedName{Name: shared}, &ns))
	h.update(t, &ns, func() { ns.Labels = map[string]string{"readers.shardwise.io/someone-else": other} })
	ready(metav1.ConditionFalse, "GrantNotAllowed")

	setLabel(&other)
	ready(metav1.ConditionTrue, "")
	eventually(t, waitFor, func() error {
		if !h.allowed(t, sa, "list", "servicemonitors.monitoring.coreos.com", shared) {
			return fmt.Errorf("%s may not list ServiceMonitors in %s yet", sa, shared)
		}
		return nil
	})
	require.True(t, h.allowed(t, sa, "get", "secrets", shared), "the secret reader role, in the opted-in namespace")
	require.False(t, h.allowed(t, sa, "list", "secrets", shared))

	setLabel(nil)
	ready(metav1.ConditionFalse, "GrantNotAllowed")
	eventually(t, waitFor, func() error {
		if h.allowed(t, sa, "list", "servicemonitors.monitoring.coreos.com", shared) {
			return fmt.Errorf("%s may still list ServiceMonitors in %s", sa, shared)
		}
		return nil
	})
}
