package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	opampclient "github.com/open-telemetry/opamp-go/client"
	clienttypes "github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/bridge"
	"github.com/shardwise/shardwise/internal/bridge/opamptest"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.MainWith(m, &env, testenv.Options{
		CRDDirs:    []string{filepath.Join(testenv.Root(), "config", "crd", "bases")},
		CheckLeaks: true,
		// controller-runtime's metadata-only informers (the operator's
		// prune lists, run here by the collector reconciler) leave their
		// GVK-fixup watch goroutine blocked on a send after the manager stops.
		IgnoreLeaks: []goleak.Option{goleak.IgnoreAnyFunction("k8s.io/apimachinery/pkg/watch.(*filteredWatch).loop")},
	}))
}

const (
	bridgeName = "fleet"
	waitFor    = 60 * time.Second
	tick       = 50 * time.Millisecond
)

type fixture struct {
	client client.Client
	ns     string
}

func newFixture(t *testing.T, ns string) fixture {
	t.Helper()
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	c := testenv.Client(t, testenv.Require(t, env), scheme)
	testenv.Namespace(t, c, ns, nil)
	return fixture{client: c, ns: ns}
}

// runOperator runs the collector reconciler on the namespace, so the test
// sees the operator roll a collector's ConfigMap when the bridge changes it.
func (f fixture) runOperator(t *testing.T) {
	t.Helper()
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	mgr := testenv.NewManager(t, testenv.Require(t, env), ctrl.Options{Scheme: scheme, Cache: testenv.CacheIn(f.ns)})
	r := &controller.CollectorReconciler{Client: mgr.GetClient(), Scheme: scheme, Settings: manifests.Settings{
		CollectorImage: "otel/opentelemetry-collector-contrib:0.165.0", TargetAllocatorImage: "ghcr.io/shardwise/allocator:dev",
	}}
	require.NoError(t, r.SetupWithManager(mgr, ctrlcontroller.Options{SkipNameValidation: ptr.To(true)}))
	testenv.Run(t, mgr.Start)
}

// runBridge runs a bridge against the server at addr until the test ends.
func (f fixture) runBridge(t *testing.T, addr string) *bridge.Bridge {
	t.Helper()
	return f.runBridgeProxy(t, addr, "")
}

// runBridgeProxy is runBridge with the proxy for collectors' own OpAMP
// connections on listenAddr.
func (f fixture) runBridgeProxy(t *testing.T, addr, listenAddr string) *bridge.Bridge {
	t.Helper()
	return f.runBridgeWith(t, addr, listenAddr, f.ns, "")
}

// runBridgeWith runs a bridge watching watchNamespace ("" for every
// namespace), with extra lines of configuration.
func (f fixture) runBridgeWith(t *testing.T, addr, listenAddr, watchNamespace, extra string) *bridge.Bridge {
	t.Helper()
	// The test's OpAMP server speaks plain WebSocket on loopback.
	raw := fmt.Sprintf(`
endpoint: ws://%s/v1/opamp
tls: {insecure: true}
capabilities:
  AcceptsRemoteConfig: true
  AcceptsRestartCommand: true
  ReportsEffectiveConfig: true
  ReportsHealth: true
  ReportsRemoteConfig: true
componentsAllowed:
  receivers: [otlp]
  processors: [batch, memory_limiter]
  exporters: [debug, otlp]
# The default fields and the mode, so the server may create statefulsets.
remoteConfigFields: [config, replicas, resources, mode]
%s`, addr, extra)
	cfg, err := bridge.ParseConfig([]byte(raw))
	require.NoError(t, err)
	b, err := bridge.New(bridge.Options{
		Config:            cfg,
		Identity:          bridge.Identity{Name: bridgeName, Namespace: f.ns, Version: "test"},
		WatchNamespace:    watchNamespace,
		HeartbeatInterval: 200 * time.Millisecond,
		RestConfig:        testenv.Require(t, env),
		Logger:            testLogger(t),
		ListenAddr:        listenAddr,
	})
	require.NoError(t, err)
	testenv.Run(t, b.Run)
	return b
}

// testLogger logs to the test's output when SHARDWISE_TEST_LOG is set.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("SHARDWISE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// collectorDoc is a collector resource with labels and an exporter.
func collectorDoc(name string, labels map[string]string, exporter string) string {
	var l strings.Builder
	for k, v := range labels {
		fmt.Fprintf(&l, "    %s: %q\n", k, v)
	}
	meta := "metadata:\n  name: " + name + "\n"
	if l.Len() > 0 {
		meta += "  labels:\n" + l.String()
	}
	return `apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
` + meta + `spec:
  mode: statefulset
  config:
    receivers:
      otlp:
        protocols:
          grpc: {}
    exporters:
      ` + exporter + `: {}
    service:
      pipelines:
        traces:
          receivers: [otlp]
          exporters: [` + exporter + `]
`
}

func (f fixture) create(t *testing.T, doc string) {
	t.Helper()
	var c v1beta1.OpenTelemetryCollector
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &c))
	c.Namespace = f.ns
	require.NoError(t, f.client.Create(t.Context(), &c))
}

func (f fixture) get(t *testing.T, name string) (*v1beta1.OpenTelemetryCollector, error) {
	t.Helper()
	var c v1beta1.OpenTelemetryCollector
	err := f.client.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, &c)
	return &c, err
}

func exporterOf(c *v1beta1.OpenTelemetryCollector) []string {
	var out []string
	for k := range c.Spec.Config.Exporters.Object {
		out = append(out, k)
	}
	return out
}

// TestBridge: the bridge reports the labelled collectors with their
// configuration and their pods' health, applies a pushed configuration
// (the CR changes and the operator rolls the collector's ConfigMap),
// deletes only the collectors it created, and refuses a disallowed
// component, a report-only collector, malformed entries and a configuration
// the API server refuses, leaving every collector as it was.
func TestBridge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "bridge-apply")
	ctx := t.Context()
	ns := f.ns
	f.create(t, collectorDoc("managed", map[string]string{bridge.LabelManaged: "true"}, "debug"))
	f.create(t, collectorDoc("named", map[string]string{bridge.LabelManaged: bridgeName}, "debug"))
	f.create(t, collectorDoc("reporting", map[string]string{bridge.LabelReporting: "true"}, "debug"))
	f.create(t, collectorDoc("other-bridge", map[string]string{bridge.LabelManaged: "another"}, "debug"))
	f.create(t, collectorDoc("unlabelled", nil, "debug"))
	f.runOperator(t)

	// A running, ready pod of the managed collector.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "managed-collector-0", Labels: manifests.SelectorLabels(ns, "managed", manifests.ComponentCollector)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "otc-container", Image: "x"}}},
	}
	require.NoError(t, f.client.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.Now()),
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	require.NoError(t, f.client.Status().Update(ctx, pod))

	srv := opamptest.Start(t, "127.0.0.1:0")
	f.runBridge(t, srv.Addr)

	// Reported: the labelled collectors, each with its configuration.
	want := []string{ns + "/managed", ns + "/named", ns + "/reporting"}
	require.Eventually(t, func() bool {
		eff, _, _, _ := srv.Snapshot()
		if len(eff) != len(want) {
			return false
		}
		for _, k := range want {
			if !strings.Contains(eff[k], "exporters:") || !strings.Contains(eff[k], "kind: OpenTelemetryCollector") {
				return false
			}
		}
		return true
	}, waitFor, tick, "effective config never listed %v", want)

	// Health: the managed collector's pod is healthy; named has no pods.
	require.Eventually(t, func() bool {
		_, _, h, _ := srv.Snapshot()
		m := h.GetComponentHealthMap()[ns+"/managed"]
		n := h.GetComponentHealthMap()[ns+"/named"]
		return m.GetHealthy() && m.GetComponentHealthMap()[ns+"/managed-collector-0"].GetHealthy() &&
			n != nil && !n.GetHealthy() && n.GetLastError() == "no pods"
	}, waitFor, tick, "health never reported the pods")

	// The operator has rendered the managed collector's ConfigMap.
	configMaps := func() map[string]string {
		var list corev1.ConfigMapList
		require.NoError(t, f.client.List(ctx, &list, client.InNamespace(ns)))
		out := map[string]string{}
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "managed-collector-") {
				out[cm.Name] = cm.Data[manifests.CollectorConfigKey]
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(configMaps()) == 1 }, waitFor, tick)
	before := configMaps()

	// Apply: update managed to the otlp exporter, create a new collector,
	// keep named.
	hash := srv.Push(t, map[string]string{
		ns + "/managed":  collectorDoc("managed", nil, "otlp"),
		ns + "/created":  collectorDoc("created", nil, "debug"),
		ns + "/created2": collectorDoc("created2", nil, "debug"),
		ns + "/named":    collectorDoc("named", nil, "debug"),
	})
	st := srv.WaitStatus(t, hash)
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, st.GetStatus(), st.GetErrorMessage())
	managed, err := f.get(t, "managed")
	require.NoError(t, err)
	require.Equal(t, []string{"otlp"}, exporterOf(managed))
	require.Equal(t, "true", managed.Labels[bridge.LabelManaged], "an update keeps the metadata")
	created, err := f.get(t, "created")
	require.NoError(t, err)
	require.Equal(t, bridge.CreatedByBridge, created.Labels[bridge.LabelCreatedBy])
	require.Equal(t, bridgeName, created.Labels[bridge.LabelManaged])
	// The operator rolls the collector's ConfigMap to the new config.
	require.Eventually(t, func() bool {
		for name, body := range configMaps() {
			if _, old := before[name]; old {
				continue
			}
			var rendered struct {
				Exporters map[string]any `json:"exporters"`
			}
			if yaml.Unmarshal([]byte(body), &rendered) == nil && rendered.Exporters["otlp"] != nil && rendered.Exporters["debug"] == nil {
				return true
			}
		}
		return false
	}, waitFor, tick, "the operator never rendered the pushed config")
	// The report follows.
	require.Eventually(t, func() bool {
		eff, _, _, _ := srv.Snapshot()
		return eff[ns+"/created"] != ""
	}, waitFor, tick)

	// A config that no longer names "created" deletes it; named and managed
	// were not created by the bridge and stay even when not named.
	hash = srv.Push(t, map[string]string{ns + "/managed": collectorDoc("managed", nil, "otlp"), ns + "/created2": collectorDoc("created2", nil, "debug")})
	st = srv.WaitStatus(t, hash)
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, st.GetStatus(), st.GetErrorMessage())
	_, err = f.get(t, "created")
	require.True(t, apierrors.IsNotFound(err), "created should be deleted: %v", err)
	_, err = f.get(t, "named")
	require.NoError(t, err)

	// Refusals: nothing changes (the operator writes statuses meanwhile, so
	// compare generations, which count spec changes, and labels).
	type state struct {
		generation int64
		labels     map[string]string
	}
	rv := map[string]state{}
	for _, n := range []string{"managed", "named", "reporting", "other-bridge", "unlabelled", "created2"} {
		c, err := f.get(t, n)
		require.NoError(t, err)
		rv[n] = state{c.Generation, c.Labels}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		msg   string
	}{
		{"disallowed component", map[string]string{ns + "/managed": collectorDoc("managed", nil, "kafka")}, "components not allowed: exporters.kafka"},
		{"report-only collector", map[string]string{ns + "/reporting": collectorDoc("reporting", nil, "debug")}, "cannot modify a collector labelled opentelemetry.io/opamp-reporting=true"},
		{"collector of another bridge", map[string]string{ns + "/other-bridge": collectorDoc("other-bridge", nil, "debug")}, "cannot modify a collector without"},
		{"unlabelled collector", map[string]string{ns + "/unlabelled": collectorDoc("unlabelled", nil, "debug")}, "cannot modify a collector without"},
		{"malformed body, with a valid entry", map[string]string{
			ns + "/named":   collectorDoc("named", nil, "otlp"),
			ns + "/managed": "spec: [",
		}, "not an OpenTelemetryCollector"},
		{"a field the server may not set", map[string]string{
			ns + "/managed": strings.Replace(collectorDoc("managed", nil, "otlp"), "  mode: statefulset\n", "  mode: statefulset\n  image: registry.example/evil:1\n  hostNetwork: true\n", 1),
		}, "the OpAMP server may not set spec.hostNetwork, spec.image"},
		{"deleting every collector the bridge created", map[string]string{ns + "/managed": collectorDoc("managed", nil, "otlp")}, "would delete all 1 collectors the bridge created"},
		{"an empty config map", map[string]string{}, "would delete all 1 collectors the bridge created"},
		{"bad key", map[string]string{"no-namespace": collectorDoc("x", nil, "debug")}, "key must be <namespace>/<name>"},
		{"outside the namespace", map[string]string{"elsewhere/x": collectorDoc("x", nil, "debug")}, "outside the bridge's namespace"},
		{"refused by the API server, with a valid entry", map[string]string{
			ns + "/named":    collectorDoc("named", nil, "otlp"),
			ns + "/created2": collectorDoc("created2", nil, "debug"),
			ns + "/managed":  strings.Replace(collectorDoc("managed", nil, "debug"), "  mode: statefulset\n", "  mode: statefulset\n  replicas: -1\n", 1),
		}, "replicas"},
	} {
		hash := srv.Push(t, tc.files)
		st := srv.WaitStatus(t, hash)
		require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, st.GetStatus(), tc.name)
		require.Contains(t, st.GetErrorMessage(), tc.msg, tc.name)
		for n, v := range rv {
			c, err := f.get(t, n)
			require.NoError(t, err, tc.name)
			got := state{c.Generation, c.Labels}
			require.Equal(t, v, got, "%s: %s changed", tc.name, n)
		}
		_, err := f.get(t, "x")
		require.True(t, apierrors.IsNotFound(err), tc.name)
	}

	// The restart command rolls the managed collectors' pods, not the
	// report-only one's: the bridge annotates the collectors (it has no
	// rights on workloads) and the operator rolls their pod templates.
	restartedAt := func(name string) string {
		var sts appsv1.StatefulSet
		if err := f.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: manifests.CollectorName(name)}, &sts); err != nil {
			return "error: " + err.Error()
		}
		return sts.Spec.Template.Annotations[manifests.AnnotationRestartedAt]
	}
	require.Eventually(t, func() bool { return !strings.HasPrefix(restartedAt("reporting"), "error") }, waitFor, tick)
	srv.Restart(t)
	require.Eventually(t, func() bool {
		m := restartedAt("managed")
		return m != "" && !strings.HasPrefix(m, "error") && restartedAt("named") != ""
	}, waitFor, tick, "managed collectors not restarted: %q", restartedAt("managed"))
	require.Empty(t, restartedAt("reporting"))
}

// TestClusterWideBridge: a bridge watching every namespace writes only to
// the namespaces its OpAMPBridge lists, and with remoteConfigMayDeleteAll
// a configuration may delete every collector it created.
func TestClusterWideBridge(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "bridge-cw")
	other := newFixture(t, "bridge-cw-other")
	ns := f.ns
	srv := opamptest.Start(t, "127.0.0.1:0")
	f.runBridgeWith(t, srv.Addr, "", "", "remoteConfigNamespaces: ["+ns+"]\nremoteConfigMayDeleteAll: true\n")

	hash := srv.Push(t, map[string]string{ns + "/created": collectorDoc("created", nil, "debug")})
	st := srv.WaitStatus(t, hash)
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, st.GetStatus(), st.GetErrorMessage())
	_, err := f.get(t, "created")
	require.NoError(t, err)

	for _, target := range []string{"kube-system", other.ns} {
		hash := srv.Push(t, map[string]string{
			ns + "/created":     collectorDoc("created", nil, "debug"),
			target + "/planted": collectorDoc("planted", nil, "debug"),
		})
		st := srv.WaitStatus(t, hash)
		require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, st.GetStatus(), target)
		require.Contains(t, st.GetErrorMessage(), "remoteConfigNamespaces do not include "+target)
		var c v1beta1.OpenTelemetryCollector
		err := f.client.Get(t.Context(), types.NamespacedName{Namespace: target, Name: "planted"}, &c)
		require.True(t, apierrors.IsNotFound(err), "%s/planted was written: %v", target, err)
	}

	// Opted in: a configuration without entries deletes what the bridge
	// created.
	hash = srv.Push(t, map[string]string{})
	st = srv.WaitStatus(t, hash)
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, st.GetStatus(), st.GetErrorMessage())
	_, err = f.get(t, "created")
	require.True(t, apierrors.IsNotFound(err), "created should be deleted: %v", err)
}

// TestBridgeSurvivesServerRestart: the server goes away and a new one comes
// up on the same address; the bridge reconnects and reports again,
// including what changed while the server was down.
func TestBridgeSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "bridge-restart")
	ns := f.ns
	f.create(t, collectorDoc("first", map[string]string{bridge.LabelManaged: "true"}, "debug"))

	srv := opamptest.Start(t, "127.0.0.1:0")
	addr := srv.Addr
	f.runBridge(t, addr)
	require.Eventually(t, func() bool {
		eff, _, _, _ := srv.Snapshot()
		return eff[ns+"/first"] != ""
	}, waitFor, tick)

	srv.Stop(t)
	// Wait until the port is free, then change the cluster while the server is down.
	require.Eventually(t, func() bool {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		return ln.Close() == nil
	}, waitFor, tick)
	f.create(t, collectorDoc("second", map[string]string{bridge.LabelManaged: bridgeName}, "debug"))

	again := opamptest.Start(t, addr)
	require.Eventually(t, func() bool {
		eff, _, _, _ := again.Snapshot()
		return eff[ns+"/first"] != "" && eff[ns+"/second"] != ""
	}, waitFor, tick, "the restarted server never got the report")
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestBridgeProxiesAgents: a collector whose own opamp extension connects to
// the bridge (upstream's proxy on --listen-addr) is reported under its
// instance UID, its health under its pod; when it goes, so does its entry.
func TestBridgeProxiesAgents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "bridge-proxy")
	ns := f.ns
	ctx := t.Context()
	f.create(t, collectorDoc("c", map[string]string{bridge.LabelManaged: "true"}, "debug"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-collector-0", Labels: manifests.SelectorLabels(ns, "c", manifests.ComponentCollector)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "otc-container", Image: "x"}}},
	}
	require.NoError(t, f.client.Create(ctx, pod))

	srv := opamptest.Start(t, "127.0.0.1:0")
	proxyAddr := freeAddr(t)
	f.runBridgeProxy(t, srv.Addr, proxyAddr)

	// A collector's opamp extension, played by opamp-go's client.
	agent := opampclient.NewWebSocket(nil)
	uid := uuid.New()
	require.NoError(t, agent.SetAgentDescription(&protobufs.AgentDescription{
		IdentifyingAttributes:    []*protobufs.KeyValue{{Key: "service.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "otelcol"}}}},
		NonIdentifyingAttributes: []*protobufs.KeyValue{{Key: "host.name", Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: "c-collector-0"}}}},
	}))
	require.NoError(t, agent.SetHealth(&protobufs.ComponentHealth{Healthy: true, Status: "StatusOK"}))
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig | protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth
	require.NoError(t, agent.SetCapabilities(&caps))
	require.NoError(t, agent.Start(ctx, clienttypes.StartSettings{
		OpAMPServerURL: "ws://" + proxyAddr + "/v1/opamp",
		InstanceUid:    clienttypes.InstanceUid(uid),
		Callbacks: clienttypes.Callbacks{
			GetEffectiveConfig: func(context.Context) (*protobufs.EffectiveConfig, error) {
				return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
					"": {Body: []byte("receivers: {otlp: {}}\n"), ContentType: "yaml"},
				}}}, nil
			},
		},
	}))
	stopped := false
	stopAgent := func() {
		if !stopped {
			stopped = true
			require.NoError(t, agent.Stop(context.Background()))
		}
	}
	t.Cleanup(stopAgent)

	require.Eventually(t, func() bool {
		eff, _, h, _ := srv.Snapshot()
		podHealth := h.GetComponentHealthMap()[ns+"/c"].GetComponentHealthMap()[ns+"/c-collector-0"]
		return eff[uid.String()] == "receivers: {otlp: {}}\n" && eff[ns+"/c"] != "" &&
			podHealth.GetComponentHealthMap()[uid.String()].GetHealthy()
	}, waitFor, tick, "the proxied agent was never reported")

	stopAgent()
	require.Eventually(t, func() bool {
		eff, _, _, _ := srv.Snapshot()
		_, present := eff[uid.String()]
		return !present && eff[ns+"/c"] != ""
	}, waitFor, tick, "the proxied agent's entry outlived its connection")
}
