package webhook

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/shardwise/shardwise/internal/instrumentation"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestSelfManagedTLS: without cert-manager the operator writes its CA and
// serving certificate into the Secret, injects the CA into the webhook
// configuration's caBundle, and turns ready only once the certificate is
// mounted (emulated here by copying the Secret into the directory, as the
// kubelet would) and the server serves it.
func TestSelfManagedTLS(t *testing.T) {
	cfg := testenv.Require(t, env)
	ctx := t.Context()
	c := testenv.Client(t, cfg, testScheme(t))
	const ns = "tls-self"
	testenv.Namespace(t, c, ns, nil)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "shardwise-webhook-server-cert", Namespace: ns}}
	require.NoError(t, c.Create(ctx, secret))
	// A configuration of its own, matching nothing, so the shared pod
	// webhook of the other tests is not touched.
	none := admissionregistrationv1.Ignore
	sideEffects := admissionregistrationv1.SideEffectClassNone
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "self-tls-test"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "self-tls.shardwise.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "shardwise-webhook-service", Path: ptr(PodPath)}},
			FailurePolicy:           &none,
			SideEffects:             &sideEffects,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}},
		}},
	}
	require.NoError(t, c.Create(ctx, mwc))

	// The operator runs with exactly the rules config/self-managed-tls
	// ships (its Secret by name, this configuration's caBundle), and
	// another Secret of the namespace is out of its reach.
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-the-operators", Namespace: ns}, StringData: map[string]string{"k": "v"}}
	require.NoError(t, c.Create(ctx, other))
	const user = "tls-self-operator"
	grantSelfManagedTLSRules(t, c, user, ns, secret.Name, mwc.Name)
	userCfg := env.UserConfig(t, user)
	uc := testenv.Client(t, userCfg, testScheme(t))
	require.Error(t, uc.Get(ctx, client.ObjectKeyFromObject(other), &corev1.Secret{}), "the rules name the operator's Secret only")
	require.Error(t, uc.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)), "the rules name the operator's Secret only")

	certDir := t.TempDir()
	mgr := testenv.NewManager(t, userCfg, ctrl.Options{
		Scheme: testScheme(t),
		// A port of its own: the pod webhook test serves on envtest's.
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: freePort(t), CertDir: certDir}),
	})
	gate, err := AddCertRotator(mgr, SelfManagedTLS{Secret: types.NamespacedName{Namespace: ns, Name: secret.Name}, Service: "shardwise-webhook-service", CertDir: certDir, MutatingWebhookConfiguration: mwc.Name})
	require.NoError(t, err)
	require.NoError(t, Setup(mgr, instrumentation.DefaultSettings(), CrossNamespace{}, prometheus.NewRegistry(), certDir, gate))

	testenv.Run(t, mgr.Start)

	// The Secret gets a CA and a serving certificate for the Service.
	// The conditions run on another goroutine: they report through ct, not t.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(secret), secret)) {
			return
		}
		assert.NotEmpty(ct, secret.Data["tls.crt"])
		assert.NotEmpty(ct, secret.Data["ca.crt"])
	}, 30*time.Second, 100*time.Millisecond)
	block, _ := pem.Decode(secret.Data["tls.crt"])
	require.NotNil(t, block)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.Contains(t, leaf.DNSNames, "shardwise-webhook-service.tls-self.svc")

	// Not ready before the certificate is mounted.
	readyz := func() error { return CertChecker(certDir, "", "", nil)(&http.Request{}) }
	require.Error(t, readyz())

	// The kubelet mounts the Secret.
	for k, v := range secret.Data {
		require.NoError(t, os.WriteFile(filepath.Join(certDir, k), v, 0o600))
	}

	// The CA lands in the caBundle.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		if !assert.NoError(ct, c.Get(ctx, client.ObjectKeyFromObject(mwc), mwc)) {
			return
		}
		assert.True(ct, bytes.Equal(mwc.Webhooks[0].ClientConfig.CABundle, secret.Data["ca.crt"]), "caBundle is not the Secret's ca.crt")
	}, 60*time.Second, 200*time.Millisecond)

	// Then the gate opens and the webhook server serves the certificate.
	select {
	case <-gate:
	case <-time.After(90 * time.Second):
		t.Fatal("the rotator never reported ready")
	}
	require.NoError(t, readyz())
	require.Eventually(t, func() bool {
		return mgr.GetWebhookServer().StartedChecker()(&http.Request{}) == nil
	}, 30*time.Second, 100*time.Millisecond)
}

// grantSelfManagedTLSRules binds user to the Role and the webhook
// ClusterRole of config/self-managed-tls/rbac.yaml, with the namespace and
// the names of this test.
func grantSelfManagedTLSRules(t *testing.T, c client.Client, user, ns, secret, mwc string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "self-managed-tls", "rbac.yaml"))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var role rbacv1.Role
	var webhookCA rbacv1.ClusterRole
	require.NoError(t, dec.Decode(&role))
	require.NoError(t, dec.Decode(&rbacv1.RoleBinding{}))
	require.NoError(t, dec.Decode(&webhookCA))
	require.Equal(t, []string{"shardwise-webhook-server-cert"}, role.Rules[0].ResourceNames, "the shipped Role names the Secret")
	role.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: user}
	role.Rules[0].ResourceNames = []string{secret}
	webhookCA.ObjectMeta = metav1.ObjectMeta{Name: user}
	for i := range webhookCA.Rules {
		if len(webhookCA.Rules[i].ResourceNames) > 0 {
			webhookCA.Rules[i].ResourceNames = []string{mwc}
		}
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for _, o := range []client.Object{
		&role,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user}, Subjects: subjects},
		&webhookCA,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user}, Subjects: subjects},
	} {
		require.NoError(t, c.Create(t.Context(), o))
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
