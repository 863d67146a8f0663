package chart

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// Bounds for everything that waits.
const (
	readyTimeout = 90 * time.Second
	pollEvery    = 250 * time.Millisecond
	stopGrace    = 15 * time.Second
	fieldOwner   = client.FieldOwner("helm")
)

// requireEnv returns the value of an environment variable the envtest tests
// need, skipping the test without it unless SHARDWISE_REQUIRE_ENVTEST is set.
func requireEnv(t *testing.T, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set: " + how
		if os.Getenv("SHARDWISE_REQUIRE_ENVTEST") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// TestInstall applies every object the chart renders, for each webhook TLS
// option, to a real kube-apiserver with server-side apply, then runs the
// operator binary with the rendered Deployment's arguments and environment,
// authenticated as the chart's ServiceAccount (so with exactly the chart's
// RBAC), and waits for /readyz. The kubelet's part (mounting the webhook
// certificate Secret), the endpoint controller's (the webhook Service's
// EndpointSlice, on this machine's address) and cert-manager's (issuing the
// Certificate, injecting its CA) are played by the test. The API server
// then reaches the webhook through the chart's Service, as in a cluster: an
// upstream v1alpha1 OpenTelemetryCollector is converted by the operator
// through the chart's CRD, with the TLS mode's CA, and reads back as
// v1beta1.
func TestInstall(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "run make test-chart, or export KUBEBUILDER_ASSETS=$(./hack/envtest.sh)")
	operator := requireEnv(t, "SHARDWISE_OPERATOR_BIN", "run make test-chart, or make build and export SHARDWISE_OPERATOR_BIN=<repo>/bin/operator")
	hostIP := endpointIP(t)

	env := &envtest.Environment{}
	// The API server resolves a webhook's Service through its EndpointSlices
	// (no cluster IP routing here), and dials the endpoint with the Service's
	// DNS name as the TLS server name, as in a cluster.
	env.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err := env.Start()
	require.NoError(t, err, "start envtest")
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	// The deprecated v1alpha1 collector comes with the CRD's warning, which
	// is not the test's business.
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandlerWithContext = rest.NoWarnings{}
	c, err := client.New(quiet, client.Options{})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	// cert-manager is not installed: its Issuer and Certificate kinds come
	// from minimal CRDs, and the test issues the certificate.
	certManagerCRDs, err := os.ReadFile(filepath.Join("testdata", "crds", "cert-manager.yaml"))
	require.NoError(t, err)
	cmCRDs, err := decode(string(certManagerCRDs))
	require.NoError(t, err)
	applyAll(t, c, cmCRDs)

	for _, tc := range []struct {
		mode string
		// values beyond the TLS mode, each exercised by one install.
		values string
	}{
		{"certManager", ""},
		// Two replicas turn leader election on; the test runs one of them.
		{"self", "replicas: 2"},
		// watchNamespace other than the release's: the operator runs on a
		// Role there (and leader election's in its own namespace).
		{"provided", "watchNamespace: sw-provided-apps\nwebhook: {failurePolicy: Fail}"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ns := "sw-" + strings.ToLower(tc.mode)
			release := ns
			fullname := release + "-shardwise"
			svcDNS := fullname + "-webhook-service." + ns + ".svc"
			vals := values(t, tc.values)
			tls := map[string]any{"mode": tc.mode}
			var ca *testCA
			if tc.mode != "self" {
				ca = newTestCA(t)
			}
			if tc.mode == "provided" {
				cert, key := ca.issue(t, svcDNS)
				tls["provided"] = map[string]any{"cert": string(cert), "key": string(key), "caBundle": string(ca.certPEM)}
			}
			webhook, _ := vals["webhook"].(map[string]any)
			if webhook == nil {
				webhook = map[string]any{}
			}
			webhook["tls"] = tls
			vals["webhook"] = webhook
			r := mustRender(t, release, ns, vals)

			// helm install --create-namespace: the namespace, the CRDs, then the
			// templates in Helm's kind order.
			applyAll(t, c, []*unstructured.Unstructured{{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}})
			if watched, _ := vals["watchNamespace"].(string); watched != "" {
				// The watched namespace exists before the release, as Helm
				// needs for the Role the chart puts there.
				applyAll(t, c, []*unstructured.Unstructured{{Object: map[string]any{
					"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": watched}}}})
			}
			applyAll(t, c, r.CRDs)
			applyAll(t, c, r.Objects)
			for _, o := range r.Objects {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(o.GroupVersionKind())
				require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(o), got), "%s %s was applied", o.GetKind(), o.GetName())
			}

			secret := fullname + "-webhook-server-cert"
			if tc.mode == "certManager" {
				// cert-manager's part: issue the Certificate into its Secret.
				crt := r.find(t, "Certificate", fullname+"-serving-cert")
				dns, _, err := unstructured.NestedStringSlice(crt.Object, "spec", "dnsNames")
				require.NoError(t, err)
				require.Contains(t, dns, svcDNS)
				secretName, _, _ := unstructured.NestedString(crt.Object, "spec", "secretName")
				require.Equal(t, secret, secretName)
				cert, key := ca.issue(t, dns...)
				applyAll(t, c, []*unstructured.Unstructured{{Object: map[string]any{
					"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
					"metadata": map[string]any{"name": secret, "namespace": ns},
					"data": map[string]any{
						"tls.crt": base64.StdEncoding.EncodeToString(cert), "tls.key": base64.StdEncoding.EncodeToString(key),
						"ca.crt": base64.StdEncoding.EncodeToString(ca.certPEM)}}}})
			}

			sa := fullname + "-operator"
			token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa,
				&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
			require.NoError(t, err, "token for the chart's ServiceAccount")
			kubeconfig := writeKubeconfig(t, cfg, token.Status.Token)

			certDir := t.TempDir()
			mountSecret(t, cs, ns, secret, certDir)

			deployment := fullname + "-operator"
			args, probe, webhookPort := adaptArgs(t, r.args(t, deployment), certDir)
			publishEndpoint(t, c, r.find(t, "Service", fullname+"-webhook-service"), hostIP, webhookPort)
			op := startOperator(t, operator, args, []string{"KUBECONFIG=" + kubeconfig, "POD_NAMESPACE=" + ns})
			waitReady(t, op, probe)

			mwcName := fullname + "-mutating-webhook-configuration"
			mwc, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), mwcName, metav1.GetOptions{})
			require.NoError(t, err)
			require.NotEmpty(t, mwc.Webhooks)
			var caBundle []byte
			switch tc.mode {
			case "certManager":
				require.Equal(t, ns+"/"+fullname+"-serving-cert", mwc.Annotations["cert-manager.io/inject-ca-from"])
				caBundle = ca.certPEM // what cainjector would write
			case "self":
				// The operator injected its own CA.
				caBundle = mwc.Webhooks[0].ClientConfig.CABundle
				require.NotEmpty(t, caBundle, "the operator injects its CA into %s", mwcName)
			case "provided":
				caBundle = mwc.Webhooks[0].ClientConfig.CABundle
				require.Equal(t, ca.certPEM, caBundle)
			}
			// The webhook server serves a certificate for the Service's name
			// that the webhook configuration's CA verifies: the API server's view.
			requireServesTLS(t, webhookPort, svcDNS, caBundle)

			// The collector CRD converts through this release's webhook
			// Service, with the TLS mode's CA.
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(crdGVK)
			if tc.mode == "certManager" {
				// cainjector's part: the Certificate's CA into the annotated CRD.
				require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: collectorCRD}, crd))
				require.Equal(t, ns+"/"+fullname+"-serving-cert", crd.GetAnnotations()["cert-manager.io/inject-ca-from"])
				patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, base64.StdEncoding.EncodeToString(ca.certPEM))
				require.NoError(t, c.Patch(t.Context(), crd, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("cainjector")))
			}
			// self: the operator injects the CA it injected into the webhook
			// configuration; the others: cainjector's or the values'.
			require.Eventually(t, func() bool {
				if err := c.Get(t.Context(), client.ObjectKey{Name: collectorCRD}, crd); err != nil {
					return false
				}
				b64, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
				got, err := base64.StdEncoding.DecodeString(b64)
				return err == nil && bytes.Equal(got, caBundle)
			}, readyTimeout, pollEvery, "the collector CRD's conversion webhook trusts the %s CA", tc.mode)
			svc, _, err := unstructured.NestedMap(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service")
			require.NoError(t, err)
			require.Equal(t, map[string]any{"name": fullname + "-webhook-service", "namespace": ns, "path": "/convert", "port": int64(443)}, svc)
			requireConverts(t, c, ns)

			if tc.mode == "self" {
				lease, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), "shardwise-operator.opentelemetry.io", metav1.GetOptions{})
				require.NoError(t, err, "leader election (replicas: 2) takes a Lease in the release namespace")
				require.NotEmpty(t, ptrValue(lease.Spec.HolderIdentity))
			}
			if tc.mode == "provided" {
				require.Equal(t, "Fail", string(*mwc.Webhooks[0].FailurePolicy))
				requireReconciled(t, c, "sw-provided-apps")
			}
			op.stop(t)
			require.NotContains(t, op.log.String(), "forbidden", "the chart's RBAC lets the operator do what it does")
		})
	}
}

// crdGVK is the kind of CustomResourceDefinitions.
var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// upstreamV1alpha1 is upstream's tests/e2e-autoscale/autoscale/00-install.yaml,
// a v1alpha1 OpenTelemetryCollector, as the operator's conversion test uses it.
var upstreamV1alpha1 = filepath.Join("..", "..", "internal", "webhook", "testdata", "conversion", "v1alpha1.yaml")

// requireConverts creates upstream's v1alpha1 collector in ns as written and
// reads it back as v1beta1 (the conversion webhook moved the deprecated
// fields and parsed the config string) and as v1alpha1 (as written), then
// deletes it. The API server calls the webhook for the create and the
// v1alpha1 read.
func requireConverts(t *testing.T, c client.Client, ns string) {
	t.Helper()
	b, err := os.ReadFile(upstreamV1alpha1)
	require.NoError(t, err)
	alpha := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(b, &alpha.Object))
	require.Equal(t, "opentelemetry.io/v1alpha1", alpha.GetAPIVersion())
	alpha.SetNamespace(ns)
	// A CRD change reaches the API server's conversion client a moment
	// after the write.
	retry(t, "create the v1alpha1 collector through the conversion webhook", func() error {
		return c.Create(t.Context(), alpha.DeepCopy())
	})
	key := client.ObjectKey{Namespace: ns, Name: alpha.GetName()}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), alpha); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete collector %s: %v", key, err)
		}
	})

	beta := &unstructured.Unstructured{}
	beta.SetAPIVersion("opentelemetry.io/v1beta1")
	beta.SetKind("OpenTelemetryCollector")
	require.NoError(t, c.Get(t.Context(), key, beta))
	maxReplicas, _, _ := unstructured.NestedInt64(beta.Object, "spec", "autoscaler", "maxReplicas")
	require.Equal(t, int64(2), maxReplicas, "deprecated spec.maxReplicas moved into spec.autoscaler")
	_, found, _ := unstructured.NestedFieldNoCopy(beta.Object, "spec", "maxReplicas")
	require.False(t, found, "v1beta1 has no spec.maxReplicas")
	exporters, _, err := unstructured.NestedStringSlice(beta.Object, "spec", "config", "service", "pipelines", "traces", "exporters")
	require.NoError(t, err, "spec.config is structured in v1beta1")
	require.Equal(t, []string{"debug"}, exporters)

	back := &unstructured.Unstructured{}
	back.SetGroupVersionKind(alpha.GroupVersionKind())
	require.NoError(t, c.Get(t.Context(), key, back))
	config, _, _ := unstructured.NestedString(back.Object, "spec", "config")
	require.Contains(t, config, "processors:\n\nexporters:", "v1alpha1 reads back as written")
	require.NoError(t, c.Delete(t.Context(), back))
}

// requireReconciled creates a deployment collector in ns and waits until
// the operator reports it Ready with its Deployment built: with the chart's
// RBAC for a watched namespace, the operator can do its work there.
func requireReconciled(t *testing.T, c client.Client, ns string) {
	t.Helper()
	col := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata: {name: watched}
spec:
  mode: deployment
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
`), &col.Object))
	col.SetNamespace(ns)
	require.NoError(t, c.Create(t.Context(), col))
	require.Eventually(t, func() bool {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(col.GroupVersionKind())
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(col), got); err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, cond := range conds {
			if m, _ := cond.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
				return true
			}
		}
		return false
	}, readyTimeout, pollEvery, "the collector in the watched namespace %s becomes Ready", ns)
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "watched-collector"}, d))
}

// retry calls f until it succeeds, failing the test with f's last error
// after readyTimeout.
func retry(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, readyTimeout, err)
		}
		time.Sleep(pollEvery)
	}
}

// endpointIP is an IPv4 address of this machine that an EndpointSlice may
// hold (not loopback or link-local) and the API server can dial. Without one
// the test cannot route the API server to the webhook.
func endpointIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		ipNet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := ipNet.IP.To4(); ip != nil && ip.IsGlobalUnicast() {
			return ip.String()
		}
	}
	msg := "no non-loopback IPv4 address on this machine: the API server cannot reach the webhook through an EndpointSlice"
	if os.Getenv("SHARDWISE_REQUIRE_ENVTEST") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// publishEndpoint plays the EndpointSlice controller for the webhook
// Service: its port, at ip:port (the operator's webhook server listens on
// every address).
func publishEndpoint(t *testing.T, c client.Client, svc *unstructured.Unstructured, ip string, port int) {
	t.Helper()
	ports, _, err := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.NoError(t, err)
	require.Len(t, ports, 1)
	name := ports[0].(map[string]any)["name"].(string)
	slice := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{
			"name": svc.GetName() + "-operator", "namespace": svc.GetNamespace(),
			"labels": map[string]any{"kubernetes.io/service-name": svc.GetName()},
		},
		"addressType": "IPv4",
		"endpoints":   []any{map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}}},
		"ports":       []any{map[string]any{"name": name, "port": int64(port), "protocol": "TCP"}},
	}}
	applyAll(t, c, []*unstructured.Unstructured{slice})
}

// helmKindOrder is the order Helm installs kinds in (pkg/release/util's
// InstallOrder, the kinds this chart uses); other kinds go last.
var helmKindOrder = []string{
	"Namespace", "CustomResourceDefinition", "ServiceAccount", "Secret", "ConfigMap",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment",
}

// applyAll server-side applies objs in Helm's order, and waits for CRDs to
// be established.
func applyAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	rank := func(o *unstructured.Unstructured) int {
		if i := slices.Index(helmKindOrder, o.GetKind()); i >= 0 {
			return i
		}
		return len(helmKindOrder)
	}
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	for _, o := range sorted {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		require.NoError(t, c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(o), fieldOwner, client.ForceOwnership),
			"server-side apply %s %s", o.GetKind(), o.GetName())
		if o.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, c, o.GetName())
		}
	}
}

func waitEstablished(t *testing.T, c client.Client, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdGVK)
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
			return false
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cd := range conds {
			m, _ := cd.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true
			}
		}
		return false
	}, readyTimeout, pollEvery, "CRD %s established", name)
}

// adaptArgs turns the rendered container arguments into ones for a process
// on this machine: free ports on localhost instead of the pod's, and the
// certificate directory the test mounts the Secret into. Everything else is
// kept as rendered.
func adaptArgs(t *testing.T, rendered []string, certDir string) (args []string, probe, webhook int) {
	t.Helper()
	probe, webhook = freePort(t), freePort(t)
	seen := map[string]bool{}
	for _, a := range rendered {
		flagName, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		seen[flagName] = true
		switch flagName {
		case "metrics-bind-address":
			a = "--metrics-bind-address=127.0.0.1:" + strconv.Itoa(freePort(t))
		case "health-probe-bind-address":
			a = "--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe)
		case "webhook-port":
			a = "--webhook-port=" + strconv.Itoa(webhook)
		}
		args = append(args, a)
	}
	for _, f := range []string{"metrics-bind-address", "health-probe-bind-address", "webhook-port", "webhook-cert-management"} {
		require.True(t, seen[f], "the chart renders --%s", f)
	}
	// The pod mounts the Secret at the default directory; here it is a
	// temporary one.
	return append(args, "--webhook-cert-dir="+certDir), probe, webhook
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// mountSecret plays the kubelet: it writes the Secret's keys into dir, and
// rewrites them when the Secret changes, until the test ends.
func mountSecret(t *testing.T, cs kubernetes.Interface, ns, name, dir string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var last string
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		for {
			s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && s.ResourceVersion != last {
				for k, v := range s.Data {
					tmp := filepath.Join(dir, "."+k+".tmp")
					if os.WriteFile(tmp, v, 0o600) == nil {
						_ = os.Rename(tmp, filepath.Join(dir, k))
					}
				}
				last = s.ResourceVersion
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// process is the operator running under test.
type process struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
	once sync.Once
}

func startOperator(t *testing.T, bin string, args, env []string) *process {
	t.Helper()
	p := &process{log: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(t, p.cmd.Start(), "start %s", bin)
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM, waits, and kills after stopGrace.
func (p *process) stop(t *testing.T) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Logf("operator exited: %v", err)
			}
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			err := <-p.done
			t.Errorf("operator did not stop within %s of SIGTERM (killed: %v)", stopGrace, err)
		}
	})
}

// waitReady polls /readyz until it is 200, failing with the operator's log
// when it is not within readyTimeout or the operator exits.
func waitReady(t *testing.T, p *process, port int) {
	t.Helper()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/readyz?verbose"
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("operator exited before it was ready (%v):\n%s", err, p.log.tail(40))
		default:
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b.String())
		} else {
			last = err.Error()
		}
		time.Sleep(pollEvery)
	}
	t.Fatalf("operator not ready within %s; last /readyz: %s\nlog:\n%s", readyTimeout, last, p.log.tail(40))
}

// requireServesTLS connects to the webhook server as the API server would:
// trusting caBundle and asking for serverName.
func requireServesTLS(t *testing.T, port int, serverName string, caBundle []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caBundle), "caBundle holds PEM certificates")
	d := &tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(t.Context(), "tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err, "TLS handshake with the webhook server as %s", serverName)
	require.NoError(t, conn.Close())
}

// writeKubeconfig writes a kubeconfig for the test API server that
// authenticates with token.
func writeKubeconfig(t *testing.T, cfg *rest.Config, token string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// testCA is a certificate authority standing in for cert-manager's or the
// user's.
type testCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardwise chart test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM serving certificate and key for dnsNames.
func (ca *testCA) issue(t *testing.T, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// syncBuffer collects a child's output; safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n lines.
func (b *syncBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func ptr[T any](v T) *T { return &v }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
