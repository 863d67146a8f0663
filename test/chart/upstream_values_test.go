package chart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// upstreamValues is a values file written for the upstream
// opentelemetry-operator chart, as a platform team's would be: the keys it
// sets are upstream's names.
const upstreamValues = `
replicaCount: 2
manager:
  image: {repository: ghcr.io/open-telemetry/opentelemetry-operator/opentelemetry-operator, tag: v0.158.0}
  collectorImage: {repository: ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-k8s, tag: 0.158.0}
  autoInstrumentationImage:
    java: {repository: registry.example/java-agent, tag: "2.20"}
    apacheHttpd: {repository: registry.example/httpd}
  autoInstrumentation: {go: {enabled: true}}
  featureGatesMap: {operator.golang.flags: true, operand.networkpolicy: false}
  extraArgs: [--labels-filter=team]
  env: {ENABLE_WEBHOOKS: "true", GOMAXPROCS: 2}
  extraEnvs: [{name: GOMEMLIMIT, value: 200MiB}]
  resources: {limits: {memory: 512Mi}}
  leaderElection: {enabled: true}
  createRbacPermissions: true
  podAnnotations: {team: obs}
  deploymentAnnotations: {owner: platform}
  securityContext: {allowPrivilegeEscalation: false}
  ports: {metricsPort: 8443, webhookPort: 9443, healthzPort: 8081}
  metrics: {secure: true}
  serviceMonitor: {enabled: true, extraLabels: {release: prom}}
  verticalPodAutoscaler: {enabled: false}
admissionWebhooks:
  create: true
  pods: {failurePolicy: Fail}
  timeoutSeconds: 10
  certManager: {enabled: false}
  autoGenerateCert: {enabled: true}
crds: {create: true}
pdb: {create: true, minAvailable: 1}
securityContext: {runAsGroup: 65532, runAsNonRoot: true, runAsUser: 65532, fsGroup: 65532}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}]
hostNetwork: true
clusterDomain: cluster.local
`

// TestUpstreamValues: an upstream values file installs this chart: each
// upstream value that means the same lands where ours would (args, env,
// image, ports, webhook, TLS mode, PDB, ServiceMonitor, pod security), the
// upstream operator's own image is not used, and NOTES.txt names the values
// that have no effect.
func TestUpstreamValues(t *testing.T) {
	t.Parallel()
	r := mustRender(t, "otel", "observability", values(t, upstreamValues))
	const dep = "otel-shardwise-operator"
	d := r.find(t, "Deployment", dep)
	spec := d.Object["spec"].(map[string]any)
	require.EqualValues(t, 2, spec["replicas"])
	require.Equal(t, map[string]string{"owner": "platform"}, d.GetAnnotations())
	c := r.container(t, dep)
	require.True(t, strings.HasPrefix(c["image"].(string), "ghcr.io/shardwise/operator:"), "manager.image names upstream's binary: %s", c["image"])
	args := r.args(t, dep)
	for _, a := range []string{
		"--leader-elect",
		"--collector-image=ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-k8s:0.158.0",
		"--feature-gates=-operand.networkpolicy,+operator.golang.flags",
		"--auto-instrumentation-java-image=registry.example/java-agent:2.20",
		"--auto-instrumentation-apache-httpd-image=registry.example/httpd",
		"--enable-go-instrumentation", "--create-rbac-permissions", "--metrics-secure",
		"--metrics-bind-address=:8443", "--health-probe-bind-address=:8081", "--webhook-port=9443",
		"--webhook-cert-management=self", "--labels-filter=team",
	} {
		require.Contains(t, args, a)
	}
	env := map[string]any{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e["value"]
	}
	require.Equal(t, "true", env["ENABLE_WEBHOOKS"])
	require.Equal(t, "2", env["GOMAXPROCS"])
	require.Equal(t, "200MiB", env["GOMEMLIMIT"])
	require.Equal(t, map[string]any{"memory": "512Mi"}, c["resources"].(map[string]any)["limits"])
	sc := c["securityContext"].(map[string]any)
	require.Equal(t, false, sc["allowPrivilegeEscalation"])
	require.NotContains(t, sc, "fsGroup", "a pod-only key is not the container's")
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	require.EqualValues(t, 65532, pod["securityContext"].(map[string]any)["fsGroup"], "upstream's securityContext is the pod's")
	require.Equal(t, true, pod["hostNetwork"])
	require.Len(t, pod["topologySpreadConstraints"], 1)
	require.Equal(t, map[string]any{"team": "obs"}, spec["template"].(map[string]any)["metadata"].(map[string]any)["annotations"])

	w := webhooks(t, r.find(t, "MutatingWebhookConfiguration", "otel-shardwise-mutating-webhook-configuration"))[0]
	require.Equal(t, "Fail", w["failurePolicy"])
	require.Equal(t, int64(10), w["timeoutSeconds"])

	pdb := r.find(t, "PodDisruptionBudget", dep)
	require.EqualValues(t, 1, pdb.Object["spec"].(map[string]any)["minAvailable"])
	sm := r.find(t, "ServiceMonitor", "otel-shardwise-metrics")
	require.Equal(t, "prom", sm.GetLabels()["release"])
	ep := sm.Object["spec"].(map[string]any)["endpoints"].([]any)[0].(map[string]any)
	require.Equal(t, "https", ep["scheme"], "secure metrics are scraped over HTTPS with the ServiceAccount's token")
	r.crd(t, "opentelemetrycollectors.opentelemetry.io")

	require.Contains(t, r.Notes, "have no effect in this chart: manager.image, manager.verticalPodAutoscaler, clusterDomain")

	// cert-manager on, CRDs off, the webhook off.
	r = mustRender(t, "otel", "observability", values(t, `
admissionWebhooks: {certManager: {enabled: true, issuerRef: {name: ca, kind: ClusterIssuer}}}
crds: {create: false}
`))
	require.Contains(t, r.args(t, dep), "--webhook-cert-management=cert-manager")
	require.Empty(t, r.crdNames())
	r = mustRender(t, "otel", "observability", values(t, `admissionWebhooks: {create: false}`))
	require.Contains(t, r.args(t, dep), "--enable-webhooks=false")
}
