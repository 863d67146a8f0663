package attack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/bridge"
	"github.com/shardwise/shardwise/internal/bridge/opamptest"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/manifests/opampbridge"
)

// platformBridge is the platform team's OpAMPBridge in platform, which the
// operator's flags let manage collectors in every namespace, pointed at
// srv, the OpAMP server the attacker controls.
type platformBridge struct {
	name string
	// sa is the ServiceAccount the operator made for it.
	sa  string
	dep *appsv1.Deployment
	// agentAddr is where its agent server listens (serveAgents), or "".
	agentAddr string
}

// startPlatformBridge creates the OpAMPBridge name in platform with extra
// spec lines, waits until the operator has built it, and runs the bridge
// binary with the configuration and the arguments the operator rendered
// (the listen addresses moved to 127.0.0.1), as the ServiceAccount the
// operator created for it, until the test ends.
func (s *suite) startPlatformBridge(t *testing.T, name string, srv *opamptest.Server, extra string) platformBridge {
	t.Helper()
	ctx := t.Context()
	_, err := s.createYAML(t, s.admin, platform, `
apiVersion: opentelemetry.io/v1alpha1
kind: OpAMPBridge
metadata:
  name: `+name+`
spec:
  endpoint: ws://`+srv.Addr+`/v1/opamp
  tls: {insecure: true}
  capabilities:
    AcceptsRemoteConfig: true
    AcceptsRestartCommand: true
    ReportsEffectiveConfig: true
    ReportsHealth: true
    ReportsRemoteConfig: true
`+extra)
	require.NoError(t, err)
	cond := s.bridgeReady(t, platform, name)
	require.Equal(t, metav1.ConditionTrue, cond.Status, "%s: %s", cond.Reason, cond.Message)

	full := opampbridge.Name(name)
	var cm corev1.ConfigMap
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: full}, &cm))
	conf := filepath.Join(t.TempDir(), opampbridge.ConfigKey)
	require.NoError(t, os.WriteFile(conf, []byte(cm.Data[opampbridge.ConfigKey]), 0o600))
	b := platformBridge{name: name, dep: &appsv1.Deployment{}}
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: full}, b.dep))
	b.sa = b.dep.Spec.Template.Spec.ServiceAccountName
	require.NotEmpty(t, b.sa)

	health := "127.0.0.1:" + strconv.Itoa(freePort(t))
	args := []string{"--kubeconfig-path=" + s.serviceAccountKubeconfig(t, platform, b.sa), "--health-listen-addr=" + health, "--heartbeat-interval=1s"}
	for _, a := range b.dep.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--config-file="):
			args = append(args, "--config-file="+conf)
		case strings.HasPrefix(a, "--listen-addr="):
			b.agentAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
			args = append(args, "--listen-addr="+b.agentAddr)
		default:
			args = append(args, a)
		}
	}
	p := start(t, "opamp-bridge", s.bridgeBin, args)
	p.waitHTTP(t, "http://"+health+"/healthz", nil)
	return b
}

// bridgeReady waits for the OpAMPBridge's Ready condition of its current
// generation.
func (s *suite) bridgeReady(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	return s.readyOf(t, "OpAMPBridge", ns, name)
}

// pushRefused pushes files from the attacker's server and asserts the
// bridge refuses them with msg; it returns the bridge's message.
func pushRefused(t *testing.T, srv *opamptest.Server, files map[string]string, msg string) string {
	t.Helper()
	st := srv.WaitStatus(t, srv.Push(t, files))
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, st.GetStatus(), "the bridge applied %v", files)
	require.Contains(t, st.GetErrorMessage(), msg)
	return st.GetErrorMessage()
}

// absent asserts that no collector ns/name exists.
func (s *suite) absent(t *testing.T, ns, name string) {
	t.Helper()
	err := s.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &v1beta1.OpenTelemetryCollector{})
	require.True(t, apierrors.IsNotFound(err), "collector %s/%s exists: %v", ns, name, err)
}

// remoteCollector is a collector as an OpAMP server would send it, with
// extra spec lines.
func remoteCollector(name, extra string) string {
	return `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: ` + name + `
spec:
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
` + extra
}

// attackBridgeRemote (item 4): the OpAMP server the platform's cluster-wide
// bridge connects to is hostile (or whoever controls it, or the connection,
// is). It pushes a collector with its own image, host network and a
// hostPath volume into team-a, plants a collector in kube-system, and,
// after the bridge created a collector, sends an empty configuration as a
// server that lost its state would. It reads what the bridge reports of a
// tenant's collector whose exporter carries a token. The bridge refuses
// each, reports the config with the credentials redacted, and a plaintext
// endpoint needs an explicit opt-in.
func attackBridgeRemote(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	srv := opamptest.Start(t, "127.0.0.1:0")
	s.startPlatformBridge(t, "remote", srv, "")

	msg := pushRefused(t, srv, map[string]string{teamA + "/evil": remoteCollector("evil", `  image: registry.example/evil:1
  hostNetwork: true
  volumes: [{name: root, hostPath: {path: /}}]
  volumeMounts: [{name: root, mountPath: /host}]
`)}, "the OpAMP server may not set spec.hostNetwork, spec.image, spec.volumeMounts, spec.volumes")
	s.absent(t, teamA, "evil")
	r.record("the OpAMP server pushes a collector into team-a with its own image, host network and a hostPath volume of /",
		"refused whole, nothing created", "the bridge takes only the OpAMPBridge's remoteConfigFields (default config, replicas, resources): "+msg)

	msg = pushRefused(t, srv, map[string]string{kubeSystem + "/planted": remoteCollector("planted", "")}, "remoteConfigNamespaces do not include kube-system")
	s.absent(t, kubeSystem, "planted")
	r.record("the OpAMP server plants a collector in kube-system through the cluster-wide bridge",
		"refused, nothing created", "a cluster-wide bridge writes to spec.remoteConfigNamespaces only, by default every namespace but kube-*: "+msg)

	st := srv.WaitStatus(t, srv.Push(t, map[string]string{teamA + "/made": remoteCollector("made", "")}))
	require.Equal(t, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, st.GetStatus(), st.GetErrorMessage())
	msg = pushRefused(t, srv, map[string]string{}, "would delete all 1 collectors the bridge created")
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: teamA, Name: "made"}, &v1beta1.OpenTelemetryCollector{}))
	r.record("after the bridge created a collector, the OpAMP server sends an empty configuration (a server that lost its state)",
		"refused, the collector stays", msg)

	// A message larger than the bridge reads: the connection closes before
	// the message is read; the bridge dials again and works on.
	huge := remoteCollector("huge", "") + "# " + strings.Repeat("x", bridge.MaxServerMessageBytes) + "\n"
	connects := srv.Connects()
	hugeHash, _ := srv.TryPush(t, map[string]string{teamA + "/huge": huge}) // the bridge may close mid-write
	eventually(t, waitFor, "the bridge closes the connection and dials again", func() error {
		if st := srv.StatusOf(hugeHash); st != nil {
			t.Fatalf("the bridge read the message it should have refused unread: %s %s", st.GetStatus(), st.GetErrorMessage())
		}
		if srv.Connects() == connects {
			return errors.New("no new connection yet")
		}
		return nil
	})
	// Until the server has noticed the closed connection, pushing to it fails.
	var pushed []byte
	eventually(t, waitFor, "the bridge dials again and applies a configuration", func() error {
		if pushed != nil {
			if _, _, _, st := srv.Snapshot(); string(st.GetLastRemoteConfigHash()) == string(pushed) &&
				st.GetStatus() == protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED {
				return nil
			}
		}
		hash, err := srv.TryPush(t, map[string]string{teamA + "/made": remoteCollector("made", "")})
		if err != nil {
			return err
		}
		pushed = hash
		return errors.New("pushed; waiting for its status")
	})
	s.absent(t, teamA, "huge")
	require.Nil(t, srv.StatusOf(hugeHash), "the bridge read the message it should have refused unread")
	r.record(fmt.Sprintf("the OpAMP server sends a %d MiB message", len(huge)>>20),
		"the connection closes unread; the bridge dials again and applies the next configuration",
		fmt.Sprintf("the bridge reads at most %d MiB per message (opamp-go patched with a read limit, third_party/opamp-go.sh)", bridge.MaxServerMessageBytes>>20))

	// The tenant's own collector, reported to the server, with a token in
	// an exporter header and in an env value.
	const secret = "s3cr3t-token-of-team-a"
	_, err := s.createYAML(t, s.tenant, teamA, `
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: leaky
  labels: {opentelemetry.io/opamp-reporting: "true"}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"token":"`+secret+`"}'}
spec:
  mode: deployment
  env: [{name: BACKEND_TOKEN, value: `+secret+`}]
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {otlp: {endpoint: backend.example:4317, headers: {authorization: "Bearer `+secret+`"}}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [otlp]}}}
`)
	require.NoError(t, err)
	var reported string
	eventually(t, waitFor, "the bridge reports team-a/leaky", func() error {
		eff, _, _, _ := srv.Snapshot()
		if reported = eff[teamA+"/leaky"]; reported == "" {
			return fmt.Errorf("not reported; keys %d", len(eff))
		}
		return nil
	})
	require.NotContains(t, reported, secret)
	require.NotContains(t, reported, "last-applied-configuration")
	require.NotContains(t, reported, "BACKEND_TOKEN", "env is not a reported field by default")
	require.Contains(t, reported, "authorization: "+bridge.Redacted)
	r.record("the OpAMP server reads a tenant's collector (token in an exporter header, an env value and the last-applied annotation)",
		"the token appears nowhere in the report", "the bridge reports name, labels and the remoteConfigFields only, credentials redacted ("+bridge.Redacted+")")

	_, err = s.createYAML(t, s.admin, platform, `
apiVersion: opentelemetry.io/v1alpha1
kind: OpAMPBridge
metadata: {name: plaintext}
spec:
  endpoint: ws://opamp.example.com/v1/opamp
  capabilities: {ReportsEffectiveConfig: true}
`)
	require.True(t, apierrors.IsInvalid(err), "a ws:// endpoint without tls.insecure: %v", err)
	require.ErrorContains(t, err, "tls.insecure: true")
	r.record("an OpAMPBridge sends collectors' configurations and its headers to a ws:// endpoint",
		"refused by the API server", "the schema asks for tls.insecure: true to send in plain text: "+statusOf(err))
}

// attackBridgeRights (item 5): the cluster-wide bridge's rights are asked
// for what upstream's has (patching every Deployment and StatefulSet), and
// whoever may edit OpAMPBridges in platform names another image for the
// cluster-wide bridge.
func attackBridgeRights(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	srv := opamptest.Start(t, "127.0.0.1:0")
	b := s.startPlatformBridge(t, "rights", srv, "")
	for _, target := range []struct{ resource, ns string }{{"deployments.apps", kubeSystem}, {"statefulsets.apps", teamA}, {"daemonsets.apps", teamB}} {
		st := s.serviceAccountAllowed(t, platform, b.sa, "patch", target.resource, target.ns)
		require.False(t, st.Allowed, "the cluster-wide bridge may patch %s in %s", target.resource, target.ns)
		r.record("the cluster-wide bridge (AcceptsRestartCommand) patches "+target.resource+" in "+target.ns,
			"denied", "SubjectAccessReview: "+sarVerdict(st)+"; restart annotates the collector and the operator rolls it")
	}

	var ob v1alpha1.OpAMPBridge
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: b.name}, &ob))
	ob.Spec.Image = "registry.example/evil-bridge:1"
	require.NoError(t, s.admin.Update(ctx, &ob))
	cond := s.bridgeReady(t, platform, b.name)
	require.Equal(t, metav1.ConditionFalse, cond.Status)
	require.Contains(t, cond.Message, "is not the operator's bridge image")
	var dep appsv1.Deployment
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: opampbridge.Name(b.name)}, &dep))
	require.NotEqual(t, ob.Spec.Image, dep.Spec.Template.Spec.Containers[0].Image)
	r.record("an editor of platform's OpAMPBridges runs its own image with the cluster-wide bridge's rights",
		"refused, the Deployment keeps the operator's image", "Ready=False "+cond.Reason+": "+cond.Message)
}

// attackBridgeProxy (item 6): the bridge's agent server. Without
// serveAgents there is nothing to connect to; with it, a NetworkPolicy
// admits only collector pods, and a client that gets through sends fifty
// instance UIDs on one connection, then closes it.
func attackBridgeProxy(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	srv := opamptest.Start(t, "127.0.0.1:0")
	off := s.startPlatformBridge(t, "closed", srv, "")
	require.Empty(t, off.agentAddr)
	args := off.dep.Spec.Template.Spec.Containers[0].Args
	require.False(t, slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--listen-addr") }), "%v", args)
	err := s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: opampbridge.Name(off.name)}, &corev1.Service{})
	require.True(t, apierrors.IsNotFound(err), "a Service for a bridge without serveAgents: %v", err)
	r.record("a client connects to a bridge's OpAMP agent server, on by default upstream",
		"nothing listens", "off unless spec.serveAgents: no --listen-addr, no container port, no Service")

	srv2 := opamptest.Start(t, "127.0.0.1:0")
	on := s.startPlatformBridge(t, "open", srv2, "  serveAgents: true\n")
	require.NotEmpty(t, on.agentAddr)
	var np networkingv1.NetworkPolicy
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: opampbridge.Name(on.name)}, &np))
	require.Len(t, np.Spec.Ingress, 1)
	require.Equal(t, map[string]string{manifests.LabelComponent: manifests.ComponentCollector}, np.Spec.Ingress[0].From[0].PodSelector.MatchLabels)
	r.record("a pod that is no collector connects to a bridge's agent server (serveAgents on)",
		"not admitted", "the bridge's NetworkPolicy admits only pods labelled "+manifests.LabelComponent+"="+manifests.ComponentCollector+" to port 8080")

	proxied := func() int {
		eff, _, _, _ := srv2.Snapshot()
		n := 0
		for k := range eff {
			if _, err := uuid.Parse(k); err == nil {
				n++
			}
		}
		return n
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+on.agentAddr+"/v1/opamp", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	for range 50 {
		id := uuid.New()
		sendWS(t, conn, &protobufs.AgentToServer{InstanceUid: id[:], EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
			ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte("receivers: {}")}},
		}}})
	}
	eventually(t, waitFor, "the bridge reports the proxied agent", func() error {
		if n := proxied(); n != 1 {
			return fmt.Errorf("%d proxied agents reported", n)
		}
		return nil
	})
	require.NoError(t, conn.Close())
	eventually(t, waitFor, "the closed connection's agent goes", func() error {
		if n := proxied(); n != 0 {
			return fmt.Errorf("%d proxied agents still reported", n)
		}
		return nil
	})
	r.record("a client sends 50 instance UIDs on one connection to the agent server, then closes it",
		"one agent held, none after the close", "agents are keyed by connection (at most 1,000; plain HTTP ones expire after 3 minutes, messages at most 4 MiB)")

	// One WebSocket message of 5 MiB: the connection closes, nothing held.
	conn, resp, err = websocket.DefaultDialer.DialContext(ctx, "ws://"+on.agentAddr+"/v1/opamp", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	id := uuid.New()
	sendWS(t, conn, &protobufs.AgentToServer{InstanceUid: id[:], EffectiveConfig: &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{
		ConfigMap: map[string]*protobufs.AgentConfigFile{"": {Body: []byte(strings.Repeat("x", 5<<20))}},
	}}})
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(waitFor)))
	_, _, err = conn.ReadMessage()
	require.Error(t, err, "the agent server closes a connection that sends 5 MiB")
	_ = conn.Close()
	require.Equal(t, 0, proxied())
	r.record("a client sends a 5 MiB WebSocket message to the agent server", "the connection is closed, nothing held",
		"the agent server reads at most 4 MiB per message (opamp-go patched with a read limit)")

	big := strings.NewReader(strings.Repeat("x", 5<<20))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+on.agentAddr+"/v1/opamp", big)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-protobuf")
	hr, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	_ = hr.Body.Close()
	require.GreaterOrEqual(t, hr.StatusCode, 400, "a 5 MiB message")
	require.Equal(t, 0, proxied())
	r.record("a client posts a 5 MiB message to the agent server", "refused, nothing held",
		fmt.Sprintf("HTTP %d: messages are capped at 4 MiB", hr.StatusCode))
}

// sendWS writes msg as opamp-go frames it on a WebSocket: a zero varint
// header, then the protobuf.
func sendWS(t *testing.T, conn *websocket.Conn, msg *protobufs.AgentToServer) {
	t.Helper()
	data, err := proto.Marshal(msg)
	require.NoError(t, err)
	frame := binary.AppendUvarint(nil, 0)
	require.NoError(t, conn.WriteMessage(websocket.BinaryMessage, append(frame, data...)))
}
