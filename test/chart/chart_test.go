package chart

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestLint runs `helm lint --strict` through Helm's library, with the
// default values and with each TLS option.
func TestLint(t *testing.T) {
	t.Parallel()
	kv, err := common.ParseKubeVersion(kubeVersion)
	require.NoError(t, err)
	for name, vals := range map[string]string{
		"default":     "",
		"self":        "webhook: {tls: {mode: self}}",
		"no webhooks": "webhook: {enabled: false}",
		"typo":        "webhook: {tls: {mode: self, sefl: {}}}",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := action.NewLint()
			l.Strict = true
			l.Namespace = "shardwise-system"
			l.KubeVersion = kv
			res := l.Run([]string{chartDir()}, values(t, vals))
			require.Equal(t, 1, res.TotalChartsLinted)
			if name == "typo" {
				require.NotEmpty(t, res.Errors, "lint checks values against the schema")
				return
			}
			require.Empty(t, res.Errors, "lint errors")
			for _, m := range res.Messages {
				require.LessOrEqual(t, m.Severity, support.InfoSev, "lint: %v", m)
			}
		})
	}
}

// TestGoldenDefault compares `helm template shardwise charts/shardwise -n
// shardwise-system` with the golden file, the CRDs' schemas left out
// (TestCRDsAreTheGenerated compares those with config/crd/bases).
func TestGoldenDefault(t *testing.T) {
	t.Parallel()
	r := mustRender(t, "shardwise", "shardwise-system", nil)
	got := elideSchemas(normalize(r.Manifest))
	golden.Assert(t, got, "default.golden.yaml")
}

// TestDefaults checks what the default values promise.
func TestDefaults(t *testing.T) {
	t.Parallel()
	r := mustRender(t, "shardwise", "shardwise-system", nil)
	require.Equal(t, []string{
		"Certificate/shardwise-serving-cert",
		"ClusterRole/shardwise-operator",
		"ClusterRole/shardwise-targetallocator-secret-reader",
		"ClusterRoleBinding/shardwise-operator",
		"Deployment/shardwise-operator",
		"Issuer/shardwise-selfsigned-issuer",
		"MutatingWebhookConfiguration/shardwise-mutating-webhook-configuration",
		"Service/shardwise-metrics",
		"Service/shardwise-webhook-service",
		"ServiceAccount/shardwise-operator",
		"ValidatingAdmissionPolicy/shardwise-tenant-rights",
		"ValidatingAdmissionPolicyBinding/shardwise-tenant-rights",
	}, r.names())
	for _, o := range r.Objects {
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, o.GetKind()) {
			require.Equal(t, "shardwise-system", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	require.Equal(t, []string{
		"instrumentations.opentelemetry.io", "opampbridges.opentelemetry.io",
		"opentelemetrycollectors.opentelemetry.io", "targetallocators.opentelemetry.io",
	}, r.crdNames(), "crds.install: the four generated CRDs")

	// The images are the release's: repository and the chart's appVersion.
	ch := loadChart(t)
	v := ch.Metadata.AppVersion
	c := r.container(t, "shardwise-operator")
	require.Equal(t, "ghcr.io/shardwise/operator:"+v, c["image"])
	args := r.args(t, "shardwise-operator")
	require.Contains(t, args, "--target-allocator-image=ghcr.io/shardwise/allocator:"+v)
	require.Contains(t, args, "--opamp-bridge-image=ghcr.io/shardwise/opamp-bridge:"+v)
	require.Contains(t, args, "--webhook-cert-management=cert-manager")
	require.Contains(t, args, "--leader-elect", "leader election even with one replica: a rolling update runs two operators")
	for _, a := range args {
		require.False(t, strings.HasPrefix(a, "--watch-namespace"), "all namespaces by default")
	}

	// Pod security: the restricted profile.
	sc := c["securityContext"].(map[string]any)
	require.Equal(t, false, sc["allowPrivilegeEscalation"])
	require.Equal(t, true, sc["readOnlyRootFilesystem"])
	require.Equal(t, true, sc["runAsNonRoot"])
	require.Equal(t, []any{"ALL"}, sc["capabilities"].(map[string]any)["drop"])
	podSC, _, err := unstructured.NestedMap(r.find(t, "Deployment", "shardwise-operator").Object, "spec", "template", "spec", "securityContext")
	require.NoError(t, err)
	require.Equal(t, true, podSC["runAsNonRoot"])
	require.Equal(t, map[string]any{"type": "RuntimeDefault"}, podSC["seccompProfile"])
	require.NotNil(t, c["resources"].(map[string]any)["limits"])

	// The webhook: generated rules, the values' policy, the release's
	// namespace excluded, cert-manager's CA injection.
	mwc := r.find(t, "MutatingWebhookConfiguration", "shardwise-mutating-webhook-configuration")
	require.Equal(t, "shardwise-system/shardwise-serving-cert", mwc.GetAnnotations()["cert-manager.io/inject-ca-from"])
	w := webhooks(t, mwc)[0]
	require.Equal(t, "Ignore", w["failurePolicy"])
	require.Equal(t, map[string]any{"name": "shardwise-webhook-service", "namespace": "shardwise-system", "path": "/mutate-v1-pod", "port": int64(443)},
		w["clientConfig"].(map[string]any)["service"])
	require.Equal(t, []any{
		map[string]any{"key": "instrumentation.shardwise.io/pod-webhook", "operator": "NotIn", "values": []any{"disabled"}},
		map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"shardwise-system", "kube-system", "kube-node-lease"}},
	}, w["namespaceSelector"].(map[string]any)["matchExpressions"])
	require.Equal(t, []any{"CREATE"}, w["rules"].([]any)[0].(map[string]any)["operations"], "rules are the generated ones")

	// The target allocators' secret reader keeps the label the operator's
	// cache selects it by.
	require.Equal(t, "opentelemetry-operator", r.find(t, "ClusterRole", "shardwise-targetallocator-secret-reader").GetLabels()["app.kubernetes.io/managed-by"])

	require.Contains(t, r.Notes, "rollout status deployment/shardwise-operator")
	require.Contains(t, r.Notes, "cert-manager")
}

// TestRBACIsTheGeneratedRole: the operator's ClusterRole has exactly the
// rules controller-gen generated into config/rbac/role.yaml.
func TestRBACIsTheGeneratedRole(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(chartDir(), "..", "..", "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var generated map[string]any
	require.NoError(t, yaml.Unmarshal(b, &generated))
	r := mustRender(t, "shardwise", "shardwise-system", nil)
	require.Equal(t, generated["rules"], r.find(t, "ClusterRole", "shardwise-operator").Object["rules"])
}

// TestWatchNamespaceRBAC: with watchNamespace the ClusterRole keeps the
// generated rules on cluster-scoped kinds only; the rest are a Role in the
// watched namespace, leader election's a Role in the release namespace, and
// together they are still exactly the generated rules.
func TestWatchNamespaceRBAC(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(chartDir(), "..", "..", "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var generated map[string]any
	require.NoError(t, yaml.Unmarshal(b, &generated))
	// grants flattens rules into group/resource/verb[/name] entries.
	grants := func(rules any) []string {
		var out []string
		for _, r := range rules.([]any) {
			r := r.(map[string]any)
			names, _ := r["resourceNames"].([]any)
			if len(names) == 0 {
				names = []any{""}
			}
			for _, g := range r["apiGroups"].([]any) {
				for _, res := range r["resources"].([]any) {
					for _, v := range r["verbs"].([]any) {
						for _, n := range names {
							out = append(out, fmt.Sprintf("%s/%s/%s/%s", g, res, v, n))
						}
					}
				}
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	r := mustRender(t, "obs", "monitoring", values(t, "watchNamespace: apps"))
	cluster := grants(r.find(t, "ClusterRole", "obs-shardwise-operator").Object["rules"])
	for _, g := range cluster {
		for _, namespaced := range []string{"/pods/", "/configmaps/", "/secrets/", "/deployments/", "/roles/", "/rolebindings/", "/leases/", "/events/"} {
			require.NotContains(t, g, namespaced, "nothing namespaced is granted cluster-wide with watchNamespace")
		}
	}
	require.Contains(t, cluster, "/namespaces/list/")
	watched := r.find(t, "Role", "obs-shardwise-operator")
	require.Equal(t, "apps", watched.GetNamespace())
	inWatched := grants(watched.Object["rules"])
	require.Contains(t, inWatched, "apps/deployments/create/")
	var election *unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == "Role" && o.GetNamespace() == "monitoring" && o.GetName() == "obs-shardwise-operator" {
			election = o
		}
	}
	require.NotNil(t, election, "leader election's Role in the release namespace")
	for _, g := range grants(election.Object["rules"]) {
		if strings.HasPrefix(g, "apps/deployments/") {
			require.Contains(t, []string{"apps/deployments/get/obs-shardwise-operator", "apps/deployments/patch/obs-shardwise-operator"}, g,
				"the uninstall hook's rights on the operator's own Deployment, by name")
			continue
		}
		require.True(t, strings.Contains(g, "/leases/") || strings.Contains(g, "/events/"), g)
	}
	rb := r.find(t, "RoleBinding", "obs-shardwise-operator")
	require.Equal(t, "obs-shardwise-operator", rb.Object["roleRef"].(map[string]any)["name"])
	all := append(append([]string{}, cluster...), inWatched...)
	slices.Sort(all)
	require.Equal(t, grants(generated["rules"]), slices.Compact(all), "the generated rules, split, none lost or added")
}

// TestTLSModes renders each webhook TLS option.
func TestTLSModes(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	cert, key := ca.issue(t, "shardwise-webhook-service.obs.svc")
	provided := map[string]any{"webhook": map[string]any{"tls": map[string]any{"mode": "provided",
		"provided": map[string]any{"cert": string(cert), "key": string(key), "caBundle": string(ca.certPEM)}}}}

	t.Run("certManager with an existing issuer", func(t *testing.T) {
		t.Parallel()
		r := mustRender(t, "shardwise", "obs", values(t, `webhook: {tls: {certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}, duration: 2160h, renewBefore: 360h}}}`))
		require.NotContains(t, r.names(), "Issuer/shardwise-selfsigned-issuer")
		crt := r.find(t, "Certificate", "shardwise-serving-cert")
		ref, _, _ := unstructured.NestedMap(crt.Object, "spec", "issuerRef")
		require.Equal(t, map[string]any{"name": "corp-ca", "kind": "ClusterIssuer"}, ref)
		d, _, _ := unstructured.NestedString(crt.Object, "spec", "duration")
		require.Equal(t, "2160h", d)
		rb, _, _ := unstructured.NestedString(crt.Object, "spec", "renewBefore")
		require.Equal(t, "360h", rb)
		require.Equal(t, []any{"shardwise-webhook-service.obs.svc", "shardwise-webhook-service.obs.svc.cluster.local"}, crt.Object["spec"].(map[string]any)["dnsNames"])
	})

	t.Run("self", func(t *testing.T) {
		t.Parallel()
		r := mustRender(t, "shardwise", "obs", values(t, `webhook: {tls: {mode: self}}`))
		for _, n := range []string{"Certificate/shardwise-serving-cert", "Issuer/shardwise-selfsigned-issuer"} {
			require.NotContains(t, r.names(), n, "no cert-manager objects")
		}
		mwc := r.find(t, "MutatingWebhookConfiguration", "shardwise-mutating-webhook-configuration")
		require.NotContains(t, mwc.GetAnnotations(), "cert-manager.io/inject-ca-from")
		args := r.args(t, "shardwise-operator")
		for _, a := range []string{"--webhook-cert-management=self", "--webhook-namespace=obs", "--webhook-secret-name=shardwise-webhook-server-cert",
			"--webhook-service-name=shardwise-webhook-service", "--webhook-configuration-name=shardwise-mutating-webhook-configuration"} {
			require.Contains(t, args, a)
		}
		require.Empty(t, r.find(t, "Secret", "shardwise-webhook-server-cert").Object["data"], "the operator fills it")
		// The rotator's RBAC: its Secret in its namespace, its webhook
		// configuration by name.
		role := r.find(t, "Role", "shardwise-operator-certs")
		require.Equal(t, "obs", role.GetNamespace())
		cr := r.find(t, "ClusterRole", "shardwise-operator-webhook-ca")
		require.Contains(t, cr.Object["rules"], map[string]any{"apiGroups": []any{"admissionregistration.k8s.io"},
			"resources": []any{"mutatingwebhookconfigurations"}, "resourceNames": []any{"shardwise-mutating-webhook-configuration"},
			"verbs": []any{"get", "update", "patch"}})
		r.find(t, "RoleBinding", "shardwise-operator-certs")
		r.find(t, "ClusterRoleBinding", "shardwise-operator-webhook-ca")
		require.Contains(t, r.Notes, "generates and renews")
	})

	t.Run("provided", func(t *testing.T) {
		t.Parallel()
		r := mustRender(t, "shardwise", "obs", provided)
		require.NotContains(t, r.names(), "Certificate/shardwise-serving-cert")
		s := r.find(t, "Secret", "shardwise-webhook-server-cert")
		require.Equal(t, "kubernetes.io/tls", s.Object["type"])
		data := s.Object["data"].(map[string]any)
		for k, want := range map[string][]byte{"tls.crt": cert, "tls.key": key, "ca.crt": ca.certPEM} {
			got, err := base64.StdEncoding.DecodeString(data[k].(string))
			require.NoError(t, err)
			require.Equal(t, want, got, k)
		}
		w := webhooks(t, r.find(t, "MutatingWebhookConfiguration", "shardwise-mutating-webhook-configuration"))[0]
		bundle, err := base64.StdEncoding.DecodeString(w["clientConfig"].(map[string]any)["caBundle"].(string))
		require.NoError(t, err)
		require.Equal(t, ca.certPEM, bundle)
		require.Contains(t, r.args(t, "shardwise-operator"), "--webhook-cert-management=none")
	})

	t.Run("provided without a certificate is refused", func(t *testing.T) {
		t.Parallel()
		_, err := render(t, "shardwise", "obs", values(t, `webhook: {tls: {mode: provided}}`))
		require.ErrorContains(t, err, "provided")
	})

	t.Run("webhook disabled", func(t *testing.T) {
		t.Parallel()
		r := mustRender(t, "shardwise", "obs", values(t, `webhook: {enabled: false}`))
		for _, n := range r.names() {
			require.NotContains(t, n, "webhook")
			require.NotContains(t, n, "Certificate")
		}
		require.Contains(t, r.args(t, "shardwise-operator"), "--enable-webhooks=false")
		c := r.container(t, "shardwise-operator")
		require.NotContains(t, c, "volumeMounts")
	})
}

// TestValues checks the other values, each where it lands.
func TestValues(t *testing.T) {
	t.Parallel()
	r := mustRender(t, "obs", "monitoring", values(t, `
replicas: 3
image: {repository: registry.example/sw/operator, tag: v9.9.9, pullPolicy: Always}
imagePullSecrets: [{name: pull}]
targetAllocator: {image: {repository: registry.example/sw/allocator, tag: v9.9.8}}
opampBridge: {image: {repository: registry.example/sw/bridge}}
collector: {image: otel/opentelemetry-collector-k8s:0.165.0}
watchNamespace: apps
allowClusterWideGrants: true
targetAllocatorClusterWideNamespaces: [observability, platform]
maxConcurrentReconciles: 8
extraArgs: [--enable-go-instrumentation]
resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}
serviceAccount: {name: sw, annotations: {iam: role}}
podAnnotations: {a: b}
podLabels: {team: obs}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: obs, effect: NoSchedule}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}}
priorityClassName: system-cluster-critical
metrics: {port: 9090, service: {port: 9091, type: NodePort}}
healthProbePort: 9092
webhook: {port: 10443, failurePolicy: Fail, timeoutSeconds: 5, namespaceSelector: {matchLabels: {inject: "yes"}, matchExpressions: []}}
`))
	d := r.find(t, "Deployment", "obs-shardwise-operator")
	require.EqualValues(t, 3, d.Object["spec"].(map[string]any)["replicas"])
	c := r.container(t, "obs-shardwise-operator")
	require.Equal(t, "registry.example/sw/operator:v9.9.9", c["image"])
	require.Equal(t, "Always", c["imagePullPolicy"])
	args := r.args(t, "obs-shardwise-operator")
	ch := loadChart(t)
	for _, a := range []string{
		"--leader-elect", "--target-allocator-image=registry.example/sw/allocator:v9.9.8",
		"--opamp-bridge-image=registry.example/sw/bridge:" + ch.Metadata.AppVersion,
		"--collector-image=otel/opentelemetry-collector-k8s:0.165.0", "--watch-namespace=apps", "--allow-cluster-wide-grants", "--target-allocator-cluster-wide-namespaces=observability,platform",
		"--max-concurrent-reconciles=8", "--enable-go-instrumentation", "--metrics-bind-address=:9090",
		"--health-probe-bind-address=:9092", "--webhook-port=10443",
	} {
		require.Contains(t, args, a)
	}
	require.Equal(t, "--enable-go-instrumentation", args[len(args)-1], "extraArgs come last")
	require.Contains(t, c["ports"], map[string]any{"name": "webhook-server", "containerPort": int64(10443), "protocol": "TCP"})
	require.Equal(t, map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"cpu": "1", "memory": "512Mi"}}, c["resources"])
	spec := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	require.Equal(t, "sw", spec["serviceAccountName"])
	require.Equal(t, []any{map[string]any{"name": "pull"}}, spec["imagePullSecrets"])
	require.Equal(t, map[string]any{"kubernetes.io/os": "linux"}, spec["nodeSelector"])
	require.Equal(t, "system-cluster-critical", spec["priorityClassName"])
	require.Len(t, spec["tolerations"], 1)
	require.Contains(t, spec["affinity"], "podAntiAffinity")
	meta := d.Object["spec"].(map[string]any)["template"].(map[string]any)["metadata"].(map[string]any)
	require.Equal(t, "obs", meta["labels"].(map[string]any)["team"])
	require.Equal(t, map[string]any{"a": "b"}, meta["annotations"])
	sa := r.find(t, "ServiceAccount", "sw")
	require.Equal(t, map[string]string{"iam": "role"}, sa.GetAnnotations())
	crb := r.find(t, "ClusterRoleBinding", "obs-shardwise-operator")
	require.Equal(t, "sw", crb.Object["subjects"].([]any)[0].(map[string]any)["name"])
	svc := r.find(t, "Service", "obs-shardwise-metrics")
	require.Equal(t, int64(9091), svc.Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"])
	require.Equal(t, "NodePort", svc.Object["spec"].(map[string]any)["type"])

	// The policy and its binding are the release's: the binding names the
	// release's policy, not config/policy's fixed name.
	r.find(t, "ValidatingAdmissionPolicy", "obs-shardwise-tenant-rights")
	binding := r.find(t, "ValidatingAdmissionPolicyBinding", "obs-shardwise-tenant-rights")
	require.Equal(t, "obs-shardwise-tenant-rights", binding.Object["spec"].(map[string]any)["policyName"])

	w := webhooks(t, r.find(t, "MutatingWebhookConfiguration", "obs-shardwise-mutating-webhook-configuration"))[0]
	require.Equal(t, "Fail", w["failurePolicy"])
	require.Equal(t, int64(5), w["timeoutSeconds"])
	require.Equal(t, map[string]any{
		"matchLabels": map[string]any{"inject": "yes"},
		"matchExpressions": []any{
			map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"monitoring", "kube-system", "kube-node-lease"}},
			map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{"apps"}},
		},
	}, w["namespaceSelector"], "the values' selector (its matchExpressions replaced), the release namespace and the control plane's excluded, only the watched one included")

	// leaderElection.enabled=false with one replica, a service account that
	// exists, no metrics Service, fullnameOverride.
	r = mustRender(t, "obs", "monitoring", values(t, `
fullnameOverride: sw
leaderElection: {enabled: false}
serviceAccount: {create: false, name: existing}
metrics: {service: {enabled: false}}
tenantRightsPolicy: {enabled: false}
`))
	require.NotContains(t, r.args(t, "sw-operator"), "--leader-elect")
	require.NotContains(t, r.names(), "ValidatingAdmissionPolicy/sw-tenant-rights")
	require.NotContains(t, r.names(), "ServiceAccount/existing")
	require.NotContains(t, r.names(), "Service/sw-metrics")
	r.find(t, "Deployment", "sw-operator")

	_, err := render(t, "obs", "monitoring", values(t, `serviceAccount: {create: false}`))
	require.ErrorContains(t, err, "serviceAccount.name is required")
}

// TestNameOverride: nameOverride replaces the chart name in every object
// name, in the labels that select the operator's pods and in the names the
// objects refer to each other by (Service, Secret, Certificate, webhook
// configuration, conversion webhook); a release name that already contains
// it is the whole prefix.
func TestNameOverride(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ release, fullname string }{
		{"prod", "prod-otel"},
		{"otel-prod", "otel-prod"},
	} {
		t.Run(tc.release, func(t *testing.T) {
			t.Parallel()
			r := mustRender(t, tc.release, "obs", values(t, `nameOverride: otel`))
			f := tc.fullname
			require.Equal(t, []string{
				"Certificate/" + f + "-serving-cert",
				"ClusterRole/" + f + "-operator",
				"ClusterRole/shardwise-targetallocator-secret-reader", // fixed in the operator
				"ClusterRoleBinding/" + f + "-operator",
				"Deployment/" + f + "-operator",
				"Issuer/" + f + "-selfsigned-issuer",
				"MutatingWebhookConfiguration/" + f + "-mutating-webhook-configuration",
				"Service/" + f + "-metrics",
				"Service/" + f + "-webhook-service",
				"ServiceAccount/" + f + "-operator",
				"ValidatingAdmissionPolicy/" + f + "-tenant-rights",
				"ValidatingAdmissionPolicyBinding/" + f + "-tenant-rights",
			}, r.names())
			for _, o := range append(slices.Clone(r.Objects), r.CRDs...) {
				require.Equal(t, "otel", o.GetLabels()["app.kubernetes.io/name"], "%s %s", o.GetKind(), o.GetName())
				require.Equal(t, tc.release, o.GetLabels()["app.kubernetes.io/instance"], "%s %s", o.GetKind(), o.GetName())
			}
			d := r.find(t, "Deployment", f+"-operator")
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
			require.Equal(t, map[string]string{"app.kubernetes.io/name": "otel", "app.kubernetes.io/instance": tc.release, "app.kubernetes.io/component": "operator"}, sel)
			podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
			for k, v := range sel {
				require.Equal(t, v, podLabels[k], "the Deployment selects its pods")
			}
			for _, svc := range []string{f + "-metrics", f + "-webhook-service"} {
				svcSel, _, _ := unstructured.NestedStringMap(r.find(t, "Service", svc).Object, "spec", "selector")
				require.Equal(t, sel, svcSel, "Service %s selects the operator's pods", svc)
			}
			spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
			require.Equal(t, f+"-operator", spec["serviceAccountName"])
			require.Equal(t, f+"-webhook-server-cert", spec["volumes"].([]any)[0].(map[string]any)["secret"].(map[string]any)["secretName"])
			crb := r.find(t, "ClusterRoleBinding", f+"-operator")
			require.Equal(t, f+"-operator", crb.Object["roleRef"].(map[string]any)["name"])
			require.Equal(t, f+"-operator", crb.Object["subjects"].([]any)[0].(map[string]any)["name"])
			crt := r.find(t, "Certificate", f+"-serving-cert")
			require.Equal(t, []any{f + "-webhook-service.obs.svc", f + "-webhook-service.obs.svc.cluster.local"}, crt.Object["spec"].(map[string]any)["dnsNames"])
			require.Equal(t, f+"-webhook-server-cert", crt.Object["spec"].(map[string]any)["secretName"])
			require.Equal(t, f+"-selfsigned-issuer", crt.Object["spec"].(map[string]any)["issuerRef"].(map[string]any)["name"])
			mwc := r.find(t, "MutatingWebhookConfiguration", f+"-mutating-webhook-configuration")
			require.Equal(t, "obs/"+f+"-serving-cert", mwc.GetAnnotations()["cert-manager.io/inject-ca-from"])
			require.Equal(t, f+"-webhook-service", webhooks(t, mwc)[0]["clientConfig"].(map[string]any)["service"].(map[string]any)["name"])
			col := r.crd(t, collectorCRD)
			svcName, _, _ := unstructured.NestedString(col.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
			require.Equal(t, f+"-webhook-service", svcName)
			require.Equal(t, "obs/"+f+"-serving-cert", col.GetAnnotations()["cert-manager.io/inject-ca-from"])
			require.Contains(t, r.Notes, "deployment/"+f+"-operator")

			// In self mode the rotator's flags name the same objects.
			r = mustRender(t, tc.release, "obs", values(t, "nameOverride: otel\nwebhook: {tls: {mode: self}}"))
			args := r.args(t, f+"-operator")
			for _, a := range []string{"--webhook-secret-name=" + f + "-webhook-server-cert", "--webhook-service-name=" + f + "-webhook-service",
				"--webhook-configuration-name=" + f + "-mutating-webhook-configuration"} {
				require.Contains(t, args, a)
			}
			cr := r.find(t, "ClusterRole", f+"-operator-webhook-ca")
			require.Contains(t, cr.Object["rules"].([]any)[1].(map[string]any)["resourceNames"], f+"-mutating-webhook-configuration")
		})
	}
}

// TestSchemaRefusesBadValues: values.schema.json refuses typos and wrong
// types, so a mistake fails the install instead of being ignored.
func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ values, says string }{
		"typo at the top":          {`replica: 2`, "replica"},
		"typo in webhook":          {`webhook: {failurPolicy: Fail}`, "failurPolicy"},
		"typo in tls":              {`webhook: {tls: {mod: self}}`, "mod"},
		"typo in security context": {`securityContext: {readOnlyRootFileSystem: true}`, "readOnlyRootFileSystem"},
		"typo in image":            {`image: {tags: v1}`, "tags"},
		"replicas as a string":     {`replicas: "2"`, "replicas"},
		"webhook.enabled string":   {`webhook: {enabled: "yes"}`, "enabled"},
		"unknown TLS mode":         {`webhook: {tls: {mode: vault}}`, "mode"},
		"bad failure policy":       {`webhook: {failurePolicy: Maybe}`, "failurePolicy"},
		"timeout out of range":     {`webhook: {timeoutSeconds: 60}`, "timeoutSeconds"},
		"bad namespace":            {`watchNamespace: Not_A_Namespace`, "watchNamespace"},
		"port out of range":        {`metrics: {port: 70000}`, "port"},
		"extra arg not a flag":     {`extraArgs: [verbose]`, "extraArgs"},
		"selector operator":        {`webhook: {namespaceSelector: {matchExpressions: [{key: a, operator: Equals}]}}`, "operator"},
		"provided key not PEM":     {`webhook: {tls: {mode: provided, provided: {cert: "-----BEGIN CERTIFICATE-----", key: nope, caBundle: "-----BEGIN CERTIFICATE-----"}}}`, "key"},
		"issuerRef without name":   {`webhook: {tls: {certManager: {issuerRef: {kind: ClusterIssuer}}}}`, "issuerRef"},
		"crds.install string":      {`crds: {install: "no"}`, "install"},
		"typo in crds":             {`crds: {instal: false}`, "instal"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := render(t, "shardwise", "shardwise-system", values(t, tc.values))
			require.Error(t, err)
			require.Contains(t, err.Error(), "schema", "refused by values.schema.json")
			require.Contains(t, err.Error(), tc.says)
		})
	}
}

// webhooks are a webhook configuration's webhooks.
func webhooks(t *testing.T, o *unstructured.Unstructured) []map[string]any {
	t.Helper()
	ws, _, err := unstructured.NestedSlice(o.Object, "webhooks")
	require.NoError(t, err)
	require.NotEmpty(t, ws)
	out := make([]map[string]any, len(ws))
	for i, w := range ws {
		out[i] = w.(map[string]any)
	}
	return out
}

// TestUninstallHook: helm uninstall first runs the operator image with
// --uninstall as the operator's ServiceAccount (a pre-delete hook Job),
// stopping the release's own Deployment and looking only at the watched
// namespace when there is one; uninstallHook.enabled=false renders none.
func TestUninstallHook(t *testing.T) {
	t.Parallel()
	job := func(r rendered) *unstructured.Unstructured {
		for _, h := range r.Hooks {
			if h.GetKind() == "Job" && h.GetName() == "obs-shardwise-operator-uninstall" {
				return h
			}
		}
		return nil
	}
	r := mustRender(t, "obs", "monitoring", nil)
	j := job(r)
	require.NotNil(t, j, "the uninstall hook Job")
	require.Equal(t, "pre-delete", j.GetAnnotations()["helm.sh/hook"])
	require.Contains(t, j.GetAnnotations()["helm.sh/hook-delete-policy"], "hook-succeeded")
	spec, _, err := unstructured.NestedMap(j.Object, "spec", "template", "spec")
	require.NoError(t, err)
	require.Equal(t, "obs-shardwise-operator", spec["serviceAccountName"])
	require.Equal(t, "Never", spec["restartPolicy"])
	c := spec["containers"].([]any)[0].(map[string]any)
	require.Equal(t, r.container(t, "obs-shardwise-operator")["image"], c["image"], "the operator's image")
	require.Equal(t, []any{"--uninstall", "--uninstall-stop-deployment=obs-shardwise-operator"}, c["args"])
	require.Equal(t, "POD_NAMESPACE", c["env"].([]any)[0].(map[string]any)["name"])
	require.Equal(t, false, c["securityContext"].(map[string]any)["allowPrivilegeEscalation"])

	r = mustRender(t, "obs", "monitoring", values(t, "watchNamespace: apps"))
	require.Contains(t, job(r).Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"], "--watch-namespace=apps")

	r = mustRender(t, "obs", "monitoring", values(t, "uninstallHook: {enabled: false}"))
	require.Nil(t, job(r))
}
