package sidecar

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// collectorFromYAML decodes an OpenTelemetryCollector manifest.
func collectorFromYAML(t testing.TB, manifest string) *v1beta1.OpenTelemetryCollector {
	t.Helper()
	c := &v1beta1.OpenTelemetryCollector{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(manifest), c))
	return c
}

// upstreamCollector is upstream's e2e sidecar collector
// (tests/e2e-sidecar/smoke-sidecar-other-namespace/00-install.yaml).
const upstreamCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: sidecar-for-my-app
  namespace: kuttl-otel-sidecar-other-namespace
spec:
  mode: sidecar
  config:
    receivers:
      jaeger:
        protocols:
          grpc: {}
    exporters:
      debug: {}
    service:
      pipelines:
        traces:
          receivers: [jaeger]
          exporters: [debug]
`

// fullCollector sets every field of today's API the sidecar uses.
const fullCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: agent
  namespace: shop
spec:
  mode: sidecar
  image: otel/opentelemetry-collector-contrib:0.160.0
  imagePullPolicy: IfNotPresent
  args:
    feature-gates: "-component.UseLocalHostAsDefaultHost"
    config: "env:EXTRA_CONFIG"
  env:
  - name: POD_NAME
    value: from-the-user
  - name: OTEL_CONFIG
    value: shadowed
  - name: TEAM
    valueFrom:
      fieldRef:
        fieldPath: metadata.labels['team']
  resources:
    limits:
      memory: 256Mi
      cpu: 500m
  securityContext:
    runAsUser: 10001
    readOnlyRootFilesystem: true
  config:
    receivers:
      otlp:
        protocols:
          grpc:
            endpoint: 0.0.0.0:14317
          http: {}
      kubeletstats:
        endpoint: ${env:K8S_NODE_NAME}:10250
      zipkin/unused: {}
      tcplog:
        listen_address: 0.0.0.0:54525
      custom:
        endpoint: localhost:7777
    processors:
      batch: {}
    exporters:
      otlp:
        endpoint: gateway.observability:4317
      prometheus:
        endpoint: 0.0.0.0:9464
    extensions:
      health_check:
        endpoint: 0.0.0.0:13134
        path: /healthz
    service:
      extensions: [health_check]
      telemetry:
        metrics:
          address: 0.0.0.0:8889
      pipelines:
        metrics:
          receivers: [otlp, kubeletstats, custom]
          processors: [batch]
          exporters: [otlp, prometheus]
        logs:
          receivers: [otlp, tcplog]
          exporters: [otlp]
`

// smokeCollector is upstream's tests/e2e-sidecar/smoke-sidecar/00-install.yaml
// collector, unchanged: it mounts a ConfigMap through configmaps.
const smokeCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: sidecar-for-my-app
spec:
  mode: sidecar
  configmaps:
  - mountpath: /tmp/example-config
    name: example-config
  config:
    receivers:
      jaeger:
        protocols:
          grpc: {}
    processors: {}

    exporters:
      debug: {}

    service:
      pipelines:
        traces:
          receivers: [jaeger]
          exporters: [debug]
`

// podFieldsCollector sets every pod-level field upstream's sidecar applies.
const podFieldsCollector = `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: agent
  namespace: shop
spec:
  mode: sidecar
  command: [/otelcol-contrib]
  ports:
  - name: jaeger-grpc
    port: 14250
  - name: syslog
    port: 5514
    protocol: UDP
    hostPort: 5514
  - name: syslog
    port: 5515
  envFrom:
  - secretRef:
      name: collector-tokens
  volumes:
  - name: certs
    secret:
      secretName: collector-certs
  volumeMounts:
  - name: certs
    mountPath: /etc/certs
    readOnly: true
  - name: app-logs
    mountPath: /var/log/app
  configmaps:
  - name: example-config
    mountpath: /tmp/example-config
  - name: app.settings
  initContainers:
  - name: fetch-certs
    image: busybox:1.36
  lifecycle:
    preStop:
      exec:
        command: [sleep, "5"]
  livenessProbe:
    initialDelaySeconds: 10
    failureThreshold: 6
  readinessProbe:
    periodSeconds: 3
  startupProbe:
    terminationGracePeriodSeconds: 30
  config:
    receivers:
      jaeger:
        protocols:
          grpc: {}
          thrift_compact: {}
    exporters:
      debug: {}
    extensions:
      health_check: {}
    service:
      extensions: [health_check]
      pipelines:
        traces:
          receivers: [jaeger]
          exporters: [debug]
`

// podWithLogs is a pod with its own volume the collector mounts.
func podWithLogs(ns string, ann map[string]string) *corev1.Pod {
	p := deploymentPod(ns, ann)
	p.Spec.Volumes = []corev1.Volume{{Name: "app-logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "app:1"}}
	return p
}

func deploymentPod(ns string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "myapp", Image: "ghcr.io/open-telemetry/opentelemetry-operator/e2e-test-app-python:main"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "my-deployment-with-sidecar-5d8f9c7b6-", Namespace: ns,
			Annotations: annotations, Labels: map[string]string{"app": "my-pod-with-sidecar"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "my-deployment-with-sidecar-5d8f9c7b6", UID: "rs-uid"}},
		},
		Spec: corev1.PodSpec{Containers: containers},
	}
}

func deploymentOwners() []Owner {
	return []Owner{
		{Kind: "ReplicaSet", Name: "my-deployment-with-sidecar-5d8f9c7b6", UID: "rs-uid"},
		{Kind: "Deployment", Name: "my-deployment-with-sidecar", UID: "deploy-uid"},
	}
}

func settings(native bool) Settings {
	return Settings{Image: "otel/opentelemetry-collector-contrib:0.165.0", NativeSidecar: native}
}

func TestMutateGolden(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 40)
	for _, tc := range []struct {
		name      string
		collector string
		ns        string
		value     string
		native    bool
		owners    []Owner
		pod       func(ns string, ann map[string]string) *corev1.Pod
	}{
		{name: "upstream-e2e-native", collector: upstreamCollector, ns: "kuttl-otel-sidecar-other-namespace", value: "kuttl-otel-sidecar-other-namespace/sidecar-for-my-app", native: true, owners: deploymentOwners()},
		{name: "upstream-e2e-plain", collector: upstreamCollector, ns: "kuttl-otel-sidecar-other-namespace", value: "true", owners: deploymentOwners()},
		{name: "full-spec", collector: fullCollector, ns: "shop", value: "agent", native: true, owners: []Owner{{Kind: "StatefulSet", Name: "db", UID: "sts-uid"}}},
		{name: "user-resource-attributes", collector: strings.Replace(upstreamCollector, "  mode: sidecar\n", "  mode: sidecar\n  env:\n  - name: OTEL_RESOURCE_ATTRIBUTES\n    value: team=shop\n", 1), ns: "kuttl-otel-sidecar-other-namespace", value: "true", owners: deploymentOwners()},
		{name: "bare-pod-with-init-container", collector: upstreamCollector, ns: "kuttl-otel-sidecar-other-namespace", value: "true", native: true, pod: func(ns string, ann map[string]string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns, Annotations: ann},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "migrate", Image: "app:1"}},
					Containers:     []corev1.Container{{Name: "app", Image: "app:1"}},
				},
			}
		}},
		{name: "upstream-smoke-sidecar", collector: smokeCollector, ns: "chainsaw-smoke-sidecar", value: "true", owners: deploymentOwners()},
		{name: "pod-fields-native", collector: podFieldsCollector, ns: "shop", value: "agent", native: true, pod: podWithLogs},
		{name: "pod-fields-plain", collector: podFieldsCollector, ns: "shop", value: "agent", pod: podWithLogs},
		{name: "long-names", collector: strings.ReplaceAll(upstreamCollector, "kuttl-otel-sidecar-other-namespace", long+"-namespace-of-a-long-name"), ns: long + "-namespace-of-a-long-name", value: "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := collectorFromYAML(t, tc.collector)
			c.Namespace = tc.ns
			ann := map[string]string{Annotation: tc.value}
			pod := deploymentPod(tc.ns, ann)
			if tc.pod != nil {
				pod = tc.pod(tc.ns, ann)
			}
			in := Input{Namespace: metav1.ObjectMeta{Name: tc.ns}, Collector: c, Owners: tc.owners}
			out := Mutate(pod, in, settings(tc.native))
			require.Equal(t, Injected, out.Result, out.Reason)
			require.Equal(t, c.Namespace+"/"+c.Name, out.Collector)
			require.Empty(t, out.Reason)
			got, err := yaml.Marshal(pod)
			require.NoError(t, err)
			golden.Assert(t, string(got), tc.name+".golden.yaml")

			require.LessOrEqual(t, len(pod.Labels[LabelInjected]), 63)
			again := pod.DeepCopy()
			require.Equal(t, AlreadyInjected, Mutate(again, in, settings(tc.native)).Result)
			require.Equal(t, pod, again, "mutating twice equals mutating once")
			// The other placement recognises it too: no second container
			// after an API server upgrade.
			require.Equal(t, AlreadyInjected, Mutate(again, in, settings(!tc.native)).Result)
			require.Equal(t, pod, again)
		})
	}
}

func TestRequested(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ns, pod string
		want    Request
	}{
		{"", "", Request{}},
		{"", "true", Request{Action: Inject, Value: "true", Namespace: "app"}},
		{"", "TRUE", Request{Action: Inject, Value: "TRUE", Namespace: "app"}},
		{"", "agent", Request{Action: Inject, Value: "agent", Namespace: "app", Name: "agent"}},
		{"", "obs/agent", Request{Action: Inject, Value: "obs/agent", Namespace: "obs", Name: "agent"}},
		{"", "false", Request{Action: Refuse, Value: "false"}},
		{"true", "", Request{Action: Inject, Value: "true", Namespace: "app"}},
		{"agent", "", Request{Action: Inject, Value: "agent", Namespace: "app", Name: "agent"}},
		{"false", "", Request{Action: Refuse, Value: "false"}},
		// The pod's false overrides the namespace's true; its name wins.
		{"true", "false", Request{Action: Refuse, Value: "false"}},
		{"true", "other", Request{Action: Inject, Value: "other", Namespace: "app", Name: "other"}},
		// The pod's true takes the namespace's named collector, not its false.
		{"agent", "true", Request{Action: Inject, Value: "agent", Namespace: "app", Name: "agent"}},
		{"False", "true", Request{Action: Inject, Value: "true", Namespace: "app"}},
		{"", "obs/", Request{Action: Inject, Value: "obs/", Namespace: "obs"}},
	} {
		t.Run(tc.ns+"|"+tc.pod, func(t *testing.T) {
			t.Parallel()
			ns := metav1.ObjectMeta{Name: "app", Annotations: map[string]string{}}
			if tc.ns != "" {
				ns.Annotations[Annotation] = tc.ns
			}
			pod := &corev1.Pod{}
			if tc.pod != "" {
				pod.Annotations = map[string]string{Annotation: tc.pod}
			}
			require.Equal(t, tc.want, Requested(ns, pod))
		})
	}
}

func TestChoose(t *testing.T) {
	t.Parallel()
	col := func(name string, mode v1beta1.Mode) v1beta1.OpenTelemetryCollector {
		return v1beta1.OpenTelemetryCollector{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"}, Spec: v1beta1.OpenTelemetryCollectorSpec{Mode: mode}}
	}
	_, err := Choose("app", nil)
	require.ErrorIs(t, err, ErrNoCollector)
	_, err = Choose("app", []v1beta1.OpenTelemetryCollector{col("gw", v1beta1.ModeDeployment)})
	require.ErrorIs(t, err, ErrNoCollector, "only sidecar-mode collectors count")
	got, err := Choose("app", []v1beta1.OpenTelemetryCollector{col("gw", v1beta1.ModeDeployment), col("agent", v1beta1.ModeSidecar)})
	require.NoError(t, err)
	require.Equal(t, "agent", got.Name)
	_, err = Choose("app", []v1beta1.OpenTelemetryCollector{col("b", v1beta1.ModeSidecar), col("a", v1beta1.ModeSidecar)})
	require.ErrorIs(t, err, ErrAmbiguous)
	require.ErrorContains(t, err, "namespace app has a, b")
}

func TestMutateResults(t *testing.T) {
	t.Parallel()
	c := collectorFromYAML(t, upstreamCollector)
	c.Namespace = "app"
	ns := metav1.ObjectMeta{Name: "app"}
	userSidecar := corev1.Container{Name: ContainerName, Image: "my/own-collector:1", Args: []string{"--config=/etc/otel.yaml"}}
	injectedPod := func(native bool) *corev1.Pod {
		pod := deploymentPod("app", map[string]string{Annotation: "true"})
		require.Equal(t, Injected, Mutate(pod, Input{Namespace: ns, Collector: c}, settings(native)).Result)
		return pod
	}
	fields := collectorFromYAML(t, podFieldsCollector)
	deployment := c.DeepCopy()
	deployment.Spec.Mode = v1beta1.ModeDeployment
	broken := c.DeepCopy()
	broken.Spec.Config.Exporters.Object["bad"] = func() {}

	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		in         Input
		want       Result
		wantReason string
		// changed says the pod must differ from the input.
		changed bool
		check   func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "no annotation", pod: deploymentPod("app", nil), in: Input{Namespace: ns, Collector: c}, want: NotRequested},
		{name: "false", pod: deploymentPod("app", map[string]string{Annotation: "false"}), in: Input{Namespace: ns, Collector: c}, want: OptedOut},
		{name: "false keeps the user's otc-container", pod: func() *corev1.Pod {
			p := deploymentPod("app", map[string]string{Annotation: "false"}, corev1.Container{Name: "app", Image: "a"}, userSidecar)
			p.Labels[LabelInjected] = "app.sidecar-for-my-app"
			return p
		}(), in: Input{Namespace: ns}, want: OptedOut},
		{name: "false removes an injected native sidecar", pod: func() *corev1.Pod {
			p := injectedPod(true)
			p.Annotations[Annotation] = "false"
			return p
		}(), in: Input{Namespace: ns}, want: Removed, changed: true, check: func(t *testing.T, pod *corev1.Pod) {
			require.Empty(t, pod.Spec.InitContainers)
			require.Len(t, pod.Spec.Containers, 1)
			require.NotContains(t, pod.Labels, LabelInjected)
		}},
		{name: "false removes an injected plain sidecar", pod: func() *corev1.Pod {
			p := injectedPod(false)
			p.Annotations[Annotation] = "false"
			return p
		}(), in: Input{Namespace: ns}, want: Removed, changed: true, check: func(t *testing.T, pod *corev1.Pod) {
			require.Equal(t, []string{"myapp"}, []string{pod.Spec.Containers[0].Name})
			require.Len(t, pod.Spec.Containers, 1)
		}},
		{name: "true respects the user's otc-container", pod: deploymentPod("app", map[string]string{Annotation: "true"}, corev1.Container{Name: "app", Image: "a"}, userSidecar),
			in: Input{Namespace: ns, Collector: c}, want: Conflict, wantReason: "already has a container named otc-container"},
		{name: "an init container of that name blocks a plain sidecar", pod: func() *corev1.Pod {
			p := deploymentPod("app", map[string]string{Annotation: "true"})
			p.Spec.InitContainers = []corev1.Container{userSidecar}
			return p
		}(), in: Input{Namespace: ns, Collector: c}, want: Conflict},
		{name: "ambiguous", pod: deploymentPod("app", map[string]string{Annotation: "true"}), in: Input{Namespace: ns, Unresolved: fmt.Errorf("%w (namespace app has a, b)", ErrAmbiguous)}, want: Ambiguous, wantReason: "several OpenTelemetryCollectors"},
		{name: "none", pod: deploymentPod("app", map[string]string{Annotation: "true"}), in: Input{Namespace: ns, Unresolved: fmt.Errorf("%w in namespace app", ErrNoCollector)}, want: NotFound},
		{name: "not found", pod: deploymentPod("app", map[string]string{Annotation: "nope"}), in: Input{Namespace: ns, Unresolved: fmt.Errorf("app/nope: %w", ErrNotFound)}, want: NotFound, wantReason: "app/nope"},
		{name: "malformed value", pod: deploymentPod("app", map[string]string{Annotation: "obs/"}), in: Input{Namespace: ns, Collector: c}, want: NotFound, wantReason: `"obs/" is not true`},
		{name: "malformed namespace", pod: deploymentPod("app", map[string]string{Annotation: "/agent"}), in: Input{Namespace: ns, Collector: c}, want: NotFound},
		{name: "lookup failed", pod: deploymentPod("app", map[string]string{Annotation: "nope"}), in: Input{Namespace: ns, Unresolved: fmt.Errorf("list: timeout")}, want: Failed, wantReason: "timeout"},
		{name: "not sidecar", pod: deploymentPod("app", map[string]string{Annotation: "sidecar-for-my-app"}), in: Input{Namespace: ns, Collector: deployment}, want: NotSidecar, wantReason: `mode "deployment"`},
		{name: "a pod volume of a collector volume's name", pod: func() *corev1.Pod {
			p := podWithLogs("shop", map[string]string{Annotation: "agent"})
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "configmap-example-config"})
			return p
		}(), in: Input{Namespace: ns, Collector: fields}, want: Clash, wantReason: `already has a volume named "configmap-example-config"`},
		{name: "a pod init container of a collector init container's name", pod: func() *corev1.Pod {
			p := podWithLogs("shop", map[string]string{Annotation: "agent"})
			p.Spec.InitContainers[0].Name = "fetch-certs"
			return p
		}(), in: Input{Namespace: ns, Collector: fields}, want: Clash, wantReason: `already has a container named "fetch-certs"`},
		{name: "a pod container of a collector init container's name", pod: func() *corev1.Pod {
			p := podWithLogs("shop", map[string]string{Annotation: "agent"})
			p.Spec.Containers[0].Name = "fetch-certs"
			return p
		}(), in: Input{Namespace: ns, Collector: fields}, want: Clash, wantReason: `"fetch-certs"`},
		{name: "a collector volume mount naming no volume", pod: deploymentPod("shop", map[string]string{Annotation: "agent"}),
			in: Input{Namespace: ns, Collector: fields}, want: Clash, wantReason: `volume "app-logs", which neither`},
		{name: "two configmaps of one name", pod: podWithLogs("shop", map[string]string{Annotation: "agent"}), in: Input{Namespace: ns, Collector: func() *v1beta1.OpenTelemetryCollector {
			f := fields.DeepCopy()
			f.Spec.Configmaps = append(f.Spec.Configmaps, f.Spec.Configmaps[0])
			return f
		}()}, want: Clash, wantReason: `"configmap-example-config"`},
		{name: "unrenderable config", pod: deploymentPod("app", map[string]string{Annotation: "true"}), in: Input{Namespace: ns, Collector: broken}, want: Failed, wantReason: "render collector config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pod := tc.pod.DeepCopy()
			out := Mutate(pod, tc.in, settings(true))
			require.Equal(t, tc.want, out.Result, out.Reason)
			require.Contains(t, out.Reason, tc.wantReason)
			if tc.changed {
				require.NotEqual(t, tc.pod, pod)
			} else {
				require.Equal(t, tc.pod, pod, "the pod is unchanged")
			}
			if tc.check != nil {
				tc.check(t, pod)
			}
		})
	}
}

func TestLabelValue(t *testing.T) {
	t.Parallel()
	require.Equal(t, "app.agent", labelValue("app", "agent"))
	// The namespace is shortened first, then the name; ends trimmed.
	ns := strings.Repeat("n", 60)
	require.Equal(t, strings.Repeat("n", 57)+".agent", labelValue(ns, "agent"))
	require.Equal(t, strings.Repeat("a", 62), labelValue("ns", strings.Repeat("a", 70)))
	require.Equal(t, "ns.agent", labelValue("-ns", "agent-"))
}

func TestContainerPortsAndProbe(t *testing.T) {
	t.Parallel()
	c := collectorFromYAML(t, fullCollector)
	container, err := Container(c, "shop", nil, nil, settings(false))
	require.NoError(t, err)
	var names []string
	for _, p := range container.Ports {
		names = append(names, fmt.Sprintf("%s:%d/%s", p.Name, p.ContainerPort, p.Protocol))
	}
	// Only receivers in a pipeline; scrapers listen nowhere; sorted by name.
	require.Equal(t, []string{"custom:7777/TCP", "health-check:13134/TCP", "metrics:8889/TCP", "otlp-grpc:14317/TCP", "otlp-http:4318/TCP", "prometheus:9464/TCP"}, names)
	require.Equal(t, "/healthz", container.LivenessProbe.HTTPGet.Path)
	// No startupProbe in the spec: a plain sidecar has none, a native one
	// starts once ready, as upstream.
	require.Nil(t, container.StartupProbe)
	require.Nil(t, container.RestartPolicy)
	native, err := Container(c, "shop", nil, nil, settings(true))
	require.NoError(t, err)
	require.Equal(t, native.ReadinessProbe, native.StartupProbe)
	require.Equal(t, int32(13134), native.StartupProbe.HTTPGet.Port.IntVal)
	require.Equal(t, resource.MustParse("256Mi"), container.Resources.Limits[corev1.ResourceMemory])
}

func TestContainerPortsMerge(t *testing.T) {
	t.Parallel()
	cfg := collectorFromYAML(t, upstreamCollector).Spec.Config
	// Inferred: jaeger-grpc 14250/TCP and metrics 8888/TCP.
	port := func(name string, n int32, proto corev1.Protocol) v1beta1.PortsSpec {
		return v1beta1.PortsSpec{ServicePort: corev1.ServicePort{Name: name, Port: n, Protocol: proto}}
	}
	for _, tc := range []struct {
		name string
		user []v1beta1.PortsSpec
		want []string
	}{
		{name: "none", want: []string{"jaeger-grpc:14250/TCP", "metrics:8888/TCP"}},
		{name: "same number drops the inferred port", user: []v1beta1.PortsSpec{port("grpc", 14250, "")}, want: []string{"grpc:14250/TCP", "metrics:8888/TCP"}},
		{name: "same number, other protocol keeps it", user: []v1beta1.PortsSpec{port("grpc-udp", 14250, corev1.ProtocolUDP)}, want: []string{"grpc-udp:14250/UDP", "jaeger-grpc:14250/TCP", "metrics:8888/TCP"}},
		{name: "same name renames the inferred port", user: []v1beta1.PortsSpec{port("jaeger-grpc", 9999, corev1.ProtocolTCP)}, want: []string{"jaeger-grpc:9999/TCP", "metrics:8888/TCP", "port-14250:14250/TCP"}},
		// The metrics port keeps its name, which the PodMonitor scrapes: a
		// user port of that name is renamed (the workload modes refuse it).
		{name: "the metrics name is the metrics port's", user: []v1beta1.PortsSpec{port("metrics", 9000, corev1.ProtocolTCP), port("port-8888", 9001, corev1.ProtocolTCP)}, want: []string{"jaeger-grpc:14250/TCP", "metrics:8888/TCP", "port-8888:9001/TCP", "port-9000:9000/TCP"}},
		{name: "fallback name taken drops it", user: []v1beta1.PortsSpec{port("jaeger-grpc", 9000, corev1.ProtocolTCP), port("port-14250", 9001, corev1.ProtocolTCP)}, want: []string{"jaeger-grpc:9000/TCP", "metrics:8888/TCP", "port-14250:9001/TCP"}},
		{name: "a repeated user name is renamed", user: []v1beta1.PortsSpec{port("app", 7000, corev1.ProtocolTCP), port("app", 7001, corev1.ProtocolTCP)}, want: []string{"app:7000/TCP", "jaeger-grpc:14250/TCP", "metrics:8888/TCP", "port-7001:7001/TCP"}},
		{name: "a renamed user port keeps its name from an inferred one", user: []v1beta1.PortsSpec{port("x", 7000, corev1.ProtocolTCP), port("x", 14251, corev1.ProtocolTCP), port("jaeger-grpc", 7002, corev1.ProtocolTCP)}, want: []string{"jaeger-grpc:7002/TCP", "metrics:8888/TCP", "port-14250:14250/TCP", "port-14251:14251/TCP", "x:7000/TCP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range container.Ports(cfg, tc.user) {
				got = append(got, fmt.Sprintf("%s:%d/%s", p.Name, p.ContainerPort, p.Protocol))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestContainerPortsNoDuplicateNames(t *testing.T) {
	t.Parallel()
	c := collectorFromYAML(t, strings.Replace(upstreamCollector, "grpc: {}", "thrift_compact: {}", 1))
	// Inferred: port-6831/UDP (jaeger-thrift-compact is too long a name).
	user := []v1beta1.PortsSpec{
		{ServicePort: corev1.ServicePort{Name: "y", Port: 5000}},
		{ServicePort: corev1.ServicePort{Name: "y", Port: 6831}},
	}
	var got []string
	for _, p := range container.Ports(c.Spec.Config, user) {
		got = append(got, fmt.Sprintf("%s:%d/%s", p.Name, p.ContainerPort, p.Protocol))
	}
	// The user's second y became port-6831/TCP; the inferred port-6831/UDP
	// has no free name left and is dropped rather than named twice.
	require.Equal(t, []string{"metrics:8888/TCP", "port-6831:6831/TCP", "y:5000/TCP"}, got)
}

func TestConfigMapVolume(t *testing.T) {
	t.Parallel()
	require.Equal(t, "configmap-example-config", container.ConfigMapVolume("example-config"))
	require.Equal(t, "configmap-app-settings", container.ConfigMapVolume("app.settings"))
	long := container.ConfigMapVolume(strings.Repeat("a", 70))
	require.Len(t, long, 63)
	require.Equal(t, "configmap-"+strings.Repeat("a", 53), long)
}

// TestSidecarInRootPod: in an application pod running as user 0 the
// sidecar gets no runAsNonRoot, which it would otherwise combine with the
// inherited user 0 and the kubelet refuse to start (the old copy set it).
func TestSidecarInRootPod(t *testing.T) {
	t.Parallel()
	c := collectorFromYAML(t, upstreamCollector)
	ctr, err := Container(c, "shop", &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, nil, settings(false))
	require.NoError(t, err)
	require.Nil(t, ctr.SecurityContext.RunAsNonRoot)
	require.False(t, *ctr.SecurityContext.AllowPrivilegeEscalation)
}
