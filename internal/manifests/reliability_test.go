package manifests_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70)
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short", "abc", 63, "abc"},
		{"exact", strings.Repeat("b", 63), 63, strings.Repeat("b", 63)},
		{"long", long, 63, strings.Repeat("a", 54) + "-" + manifests.Hash(long)[:8]},
		{"trailing dash trimmed", strings.Repeat("c", 53) + "-.-xxxxxxxxxxxx", 63, strings.Repeat("c", 53) + "-" + manifests.Hash(strings.Repeat("c", 53) + "-.-xxxxxxxxxxxx")[:8]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := manifests.Truncate(tc.in, tc.max)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len(got), tc.max)
			require.Equal(t, got, manifests.Truncate(tc.in, tc.max), "pure")
		})
	}
	// Two long names with a common prefix stay distinct.
	require.NotEqual(t, manifests.Truncate(long+"x", 63), manifests.Truncate(long+"y", 63))
}

// TestNamesAndLabelsFit builds a collector whose namespace and name are as
// long as the API server allows: every object name is a DNS label (or a DNS
// subdomain for the kinds that allow it) and every label value is valid, and
// a sibling that differs only at the end gets different names.
func TestNamesAndLabelsFit(t *testing.T) {
	t.Parallel()
	ns := strings.Repeat("n", 63)
	name := strings.Repeat("c", 200)
	doc := strings.Replace(upstreamExample, "name: collector-with-ta\n  namespace: observability", "name: "+name+"\n  namespace: "+ns, 1)
	c := decodeCollector(t, doc)
	built, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	other := decodeCollector(t, strings.Replace(doc, "name: "+name, "name: "+name+"x", 1))
	builtOther, err := manifests.BuildCollector(other, settings, nil)
	require.NoError(t, err)
	ta := allocatorFromExample(t, doc)
	ta.Spec.PrometheusCR.Enabled = true
	ta.Spec.PrometheusCR.AllowNamespaces = []string{ns}
	builtTA, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: map[string]string{"a": "b"}}, settings)
	require.NoError(t, err)
	objs := append(append(append([]client.Object{}, built.Objects...), builtTA.Objects...), builtTA.ClusterObjects...)
	for _, o := range objs {
		if _, ok := o.(*v1alpha1.TargetAllocator); ok {
			continue // named after the collector, whatever its length
		}
		require.Empty(t, validation.IsDNS1123Label(o.GetName()), "%T %s", o, o.GetName())
		for k, v := range o.GetLabels() {
			require.Empty(t, validation.IsValidLabelValue(v), "%T %s label %s=%s", o, o.GetName(), k, v)
		}
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			for k, v := range sts.Spec.Template.Labels {
				require.Empty(t, validation.IsValidLabelValue(v), "pod label %s=%s", k, v)
			}
		}
	}
	for i := range built.Objects {
		if _, ok := built.Objects[i].(*v1alpha1.TargetAllocator); ok {
			continue
		}
		require.NotEqual(t, built.Objects[i].GetName(), builtOther.Objects[i].GetName(), "%T", built.Objects[i])
	}
	require.NotEqual(t, built.Selector, builtOther.Selector)
}

func TestClusterRoleNameUnambiguous(t *testing.T) {
	t.Parallel()
	a := manifests.ClusterRoleName("team", "a-x")
	b := manifests.ClusterRoleName("team-a", "x")
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "shardwise-team-a-x-"), a)
	long := manifests.ClusterRoleName(strings.Repeat("n", 63), strings.Repeat("t", 253))
	require.Empty(t, validation.IsDNS1123Label(long), long)
	require.NotEqual(t, long, manifests.ClusterRoleName(strings.Repeat("n", 63), strings.Repeat("t", 252)))
	// A bridge's in the same namespace and of the same name is another.
	require.NotEqual(t, a, manifests.ClusterScopedName("team", "a-x", "-opamp-bridge"))
	require.NotEqual(t, manifests.ClusterScopedName("team", "a-x", "-opamp-bridge"), manifests.ClusterScopedName("team-a", "x", "-opamp-bridge"))
}

func collectorContainer(t *testing.T, objs []client.Object) (corev1.PodSpec, corev1.Container) {
	t.Helper()
	for _, o := range objs {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			return sts.Spec.Template.Spec, sts.Spec.Template.Spec.Containers[0]
		}
	}
	require.FailNow(t, "no StatefulSet")
	return corev1.PodSpec{}, corev1.Container{}
}

// TestUserPodNameWins: a user POD_NAME env var replaces the operator's; the
// container never has the key twice (server-side apply refuses duplicates).
// The user's variables come first, then the operator's others, as upstream.
func TestUserPodNameWins(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(upstreamExample, "  mode: statefulset\n", "  mode: statefulset\n  env:\n  - name: POD_NAME\n    value: fixed\n  - name: X\n    value: z\n", 1)
	built, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
	require.NoError(t, err)
	_, ctr := collectorContainer(t, built.Objects)
	var names []string
	for _, e := range ctr.Env {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"POD_NAME", "X", "GOMEMLIMIT", "GOMAXPROCS"}, names)
	require.Equal(t, corev1.EnvVar{Name: "POD_NAME", Value: "fixed"}, ctr.Env[0])
}

// TestPortsUniqueAndDeterministic: receiver names that truncate to the same
// 15 characters, and a receiver on the metrics port, give unique container
// and Service port names and numbers, the same on every build.
func TestPortsUniqueAndDeterministic(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(upstreamExample, "    exporters:\n      debug: {}", `      zipkin/averyveryverylongname1:
        endpoint: 0.0.0.0:9411
      zipkin/averyveryverylongname2:
        endpoint: 0.0.0.0:9412
      zipkin/metrics:
        endpoint: 0.0.0.0:9413
      zipkin/onmetricsport:
        endpoint: 0.0.0.0:8888
    exporters:
      debug: {}`, 1)
	doc = strings.Replace(doc, "receivers: [prometheus]", "receivers: [prometheus, zipkin/averyveryverylongname1, zipkin/averyveryverylongname2, zipkin/metrics, zipkin/onmetricsport]", 1)
	var first []corev1.ContainerPort
	for range 5 {
		built, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
		require.NoError(t, err)
		_, ctr := collectorContainer(t, built.Objects)
		names, numbers := map[string]bool{}, map[int32]bool{}
		for _, p := range ctr.Ports {
			require.False(t, names[p.Name], "duplicate port name %s in %v", p.Name, ctr.Ports)
			require.False(t, numbers[p.ContainerPort], "duplicate port %d in %v", p.ContainerPort, ctr.Ports)
			require.Empty(t, validation.IsValidPortName(p.Name), p.Name)
			names[p.Name], numbers[p.ContainerPort] = true, true
		}
		require.Len(t, ctr.Ports, 4, "metrics and 9411-9413: %v", ctr.Ports)
		require.Equal(t, "metrics", ctr.Ports[0].Name)
		for _, o := range built.Objects {
			if svc, ok := o.(*corev1.Service); ok {
				seen := map[string]bool{}
				for _, p := range svc.Spec.Ports {
					require.False(t, seen[p.Name], "Service %s: duplicate port name %s", svc.Name, p.Name)
					seen[p.Name] = true
				}
			}
		}
		if first == nil {
			first = ctr.Ports
		}
		require.Equal(t, first, ctr.Ports)
	}
}

// TestSecurityContexts: restricted defaults, and the user's own contexts with
// the unset restricted fields filled in, for the collector and the allocator.
func TestSecurityContexts(t *testing.T) {
	t.Parallel()
	restricted := &corev1.SecurityContext{
		RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	restrictedPod := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	built, err := manifests.BuildCollector(decodeCollector(t, upstreamExample), settings, nil)
	require.NoError(t, err)
	pod, ctr := collectorContainer(t, built.Objects)
	require.Equal(t, restricted, ctr.SecurityContext)
	require.Equal(t, restrictedPod, pod.SecurityContext)

	own := strings.Replace(upstreamExample, "  mode: statefulset\n", `  mode: statefulset
  securityContext:
    runAsUser: 1000
  podSecurityContext:
    fsGroup: 2000
`, 1)
	own = strings.Replace(own, "    enabled: true\n", "    enabled: true\n    securityContext:\n      readOnlyRootFilesystem: true\n    podSecurityContext:\n      runAsUser: 3000\n", 1)
	c := decodeCollector(t, own)
	built, err = manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	pod, ctr = collectorContainer(t, built.Objects)
	withUser := restricted.DeepCopy()
	withUser.RunAsUser = ptr.To(int64(1000))
	require.Equal(t, withUser, ctr.SecurityContext)
	withFSGroup := restrictedPod.DeepCopy()
	withFSGroup.FSGroup = ptr.To(int64(2000))
	require.Equal(t, withFSGroup, pod.SecurityContext)
	readOnly := restricted.DeepCopy()
	readOnly.ReadOnlyRootFilesystem = ptr.To(true)
	withUser3000 := restrictedPod.DeepCopy()
	withUser3000.RunAsUser = ptr.To(int64(3000))

	for _, tc := range []struct {
		name    string
		doc     string
		wantCtr *corev1.SecurityContext
		wantPod *corev1.PodSecurityContext
	}{
		{"defaults", upstreamExample, restricted, restrictedPod},
		{"user's", own, readOnly, withUser3000},
	} {
		ta := allocatorFromExample(t, tc.doc)
		got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta}, settings)
		require.NoError(t, err)
		for _, o := range got.Objects {
			if d, ok := o.(*appsv1.Deployment); ok {
				require.Equal(t, tc.wantCtr, d.Spec.Template.Spec.Containers[0].SecurityContext, tc.name)
				require.Equal(t, tc.wantPod, d.Spec.Template.Spec.SecurityContext, tc.name)
			}
		}
	}
}

// TestAllocatorGrants checks where the allocator's RBAC grants what: nothing
// outside its namespace without AllowClusterWideGrants, Secrets only through
// get, and only in the namespaces it reads them from.
func TestAllocatorGrants(t *testing.T) {
	t.Parallel()
	type grant struct{ kind, namespace, role string }
	for _, tc := range []struct {
		name      string
		allow     []string
		secrets   []string
		flag      bool
		grantNS   []string // --target-allocator-cluster-wide-namespaces
		optedIn   []string // namespaces labelled readers.shardwise.io/own=true
		wantErr   bool
		want      []grant
		wantRules map[string][]string // Role namespace -> resources granted
	}{
		{name: "prometheusCR off", want: []grant{{"Role", "own", ""}, {"RoleBinding", "own", "Role"}}},
		{name: "every namespace refused", allow: nil, wantErr: true},
		{name: "own namespace", allow: []string{"own"}, want: []grant{
			{"Role", "own", ""}, {"RoleBinding", "own", "Role"}, {"RoleBinding", "own", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"ClusterRole", "", ""}, {"ClusterRoleBinding", "", "ClusterRole"},
		}},
		{name: "secrets of kube-system refused", allow: []string{"own"}, secrets: []string{"kube-system"}, wantErr: true},
		{name: "other namespace refused", allow: []string{"own", "team-b"}, wantErr: true},
		{name: "secrets of kube-system with the flag", allow: []string{"own"}, secrets: []string{"kube-system"}, flag: true, want: []grant{
			{"Role", "own", ""}, {"RoleBinding", "own", "Role"}, {"RoleBinding", "kube-system", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"ClusterRole", "", ""}, {"ClusterRoleBinding", "", "ClusterRole"},
		}},
		{name: "every namespace, the allocator's namespace listed", grantNS: []string{"platform", "own"}, want: []grant{
			{"Role", "own", ""}, {"RoleBinding", "own", "Role"}, {"RoleBinding", "own", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"ClusterRole", "", ""}, {"ClusterRoleBinding", "", "ClusterRole"},
		}},
		{name: "secrets of kube-system, another namespace listed", allow: []string{"own"}, secrets: []string{"kube-system"}, grantNS: []string{"platform"}, wantErr: true},
		{name: "other namespace opted in", allow: []string{"own", "team-b"}, optedIn: []string{"team-b"}, want: []grant{
			{"Role", "own", ""}, {"RoleBinding", "own", "Role"}, {"RoleBinding", "own", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"Role", "team-b", ""}, {"RoleBinding", "team-b", "Role"}, {"RoleBinding", "team-b", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"ClusterRole", "", ""}, {"ClusterRoleBinding", "", "ClusterRole"},
		}},
		{name: "another namespace opted in, not the one named", allow: []string{"own", "team-b"}, optedIn: []string{"team-c"}, wantErr: true},
		{name: "secrets of kube-system, team-b opted in", allow: []string{"own", "team-b"}, secrets: []string{"team-b", "kube-system"}, optedIn: []string{"team-b"}, wantErr: true},
		{name: "every namespace, every one opted in", optedIn: []string{"own", "team-b", "kube-system"}, wantErr: true},
		{name: "every namespace with the flag", flag: true, want: []grant{
			{"Role", "own", ""}, {"RoleBinding", "own", "Role"}, {"RoleBinding", "own", "ClusterRole/" + manifests.SecretReaderClusterRole},
			{"ClusterRole", "", ""}, {"ClusterRoleBinding", "", "ClusterRole"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ta := &v1alpha1.TargetAllocator{}
			ta.Namespace, ta.Name = "own", "ta"
			if tc.name != "prometheusCR off" {
				ta.Spec.PrometheusCR.Enabled = true
				ta.Spec.PrometheusCR.AllowNamespaces = tc.allow
				ta.Spec.PrometheusCR.SecretNamespaces = tc.secrets
			}
			s := settings
			s.AllowClusterWideGrants = tc.flag
			s.GrantNamespaces = tc.grantNS
			got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, OptedIn: tc.optedIn}, s)
			if tc.wantErr {
				require.ErrorIs(t, err, manifests.ErrGrantNotAllowed)
				require.Contains(t, err.Error(), "--target-allocator-cluster-wide-namespaces")
				require.Contains(t, err.Error(), manifests.LabelReaderPrefix)
				for _, ns := range tc.optedIn {
					require.NotContains(t, err.Error(), ": "+ns, "an opted-in namespace is not named as refused")
				}
				return
			}
			require.NoError(t, err)
			var grants []grant
			for _, o := range append(append([]client.Object{}, got.Objects...), got.ClusterObjects...) {
				switch o := o.(type) {
				case *rbacv1.Role:
					grants = append(grants, grant{"Role", o.Namespace, ""})
					for _, r := range o.Rules {
						require.NotContains(t, r.Resources, "secrets", "Secrets only through the secret reader role")
					}
				case *rbacv1.RoleBinding:
					role := o.RoleRef.Kind
					if role == "ClusterRole" {
						role += "/" + o.RoleRef.Name
					}
					grants = append(grants, grant{"RoleBinding", o.Namespace, role})
				case *rbacv1.ClusterRole:
					grants = append(grants, grant{"ClusterRole", "", ""})
					for _, r := range o.Rules {
						require.NotContains(t, r.Resources, "secrets")
						require.NotContains(t, r.Resources, "configmaps")
					}
				case *rbacv1.ClusterRoleBinding:
					grants = append(grants, grant{"ClusterRoleBinding", "", o.RoleRef.Kind})
				}
			}
			require.Equal(t, tc.want, grants)
			for _, o := range got.ClusterObjects {
				require.Equal(t, "own/ta", o.GetAnnotations()[manifests.AnnotationOwner])
			}
		})
	}
	require.ErrorIs(t, fmt.Errorf("x: %w", manifests.ErrGrantNotAllowed), manifests.ErrGrantNotAllowed)
}

// TestRootCollectorIsAdmissible: a collector container running as user 0
// (hostmetrics of the host's files) got runAsNonRoot: true on its pod from
// the old policy, inherited it, and the kubelet refused to start it.
func TestRootCollectorIsAdmissible(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(upstreamExample, "  mode: statefulset\n", "  mode: statefulset\n  securityContext:\n    runAsUser: 0\n", 1)
	built, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
	require.NoError(t, err)
	pod, ctr := collectorContainer(t, built.Objects)
	require.Nil(t, pod.SecurityContext.RunAsNonRoot)
	require.Nil(t, ctr.SecurityContext.RunAsNonRoot)
	require.Equal(t, int64(0), *ctr.SecurityContext.RunAsUser)
}

// TestVersionLabel: app.kubernetes.io/version as upstream's
// manifestutils.Labels reads it from an image.
func TestVersionLabel(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]string{
		"ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector:0.158.0": "0.158.0",
		"otel/collector:0.158.0@sha256:abcdef":                                                    "0.158.0",
		"otel/collector":                                                                          "latest",
		"otel/collector:" + strings.Repeat("v", 70) + "-":                                         strings.Repeat("v", 63),
	} {
		require.Equal(t, want, manifests.VersionLabel(image), image)
	}
}
