package attack

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/testenv"
)

// Namespaces and names of the suite.
const (
	teamA       = "team-a"
	teamB       = "team-b"
	platform    = "platform"
	kubeSystem  = "kube-system"
	operatorNS  = "shardwise-system"
	operatorSA  = "shardwise-operator"
	tenantUser  = "tenant-a"
	clusterWide = "--target-allocator-cluster-wide-namespaces=" + platform
	// bridgeClusterWide lets the platform team's OpAMPBridges manage
	// collectors in every namespace.
	bridgeClusterWide = "--opamp-bridge-cluster-wide-namespaces=" + platform
)

// Bounds for everything that waits.
const (
	waitFor   = 60 * time.Second
	pollEvery = 200 * time.Millisecond
	stopGrace = 15 * time.Second
)

// suite is the control plane, the operator and the clients the attacks
// share.
type suite struct {
	env   *envtest.Environment
	cfg   *rest.Config // cluster admin
	admin client.Client
	kube  kubernetes.Interface
	// tenantCfg is the tenant's: a user of its own (client certificate)
	// holding only the Role "tenant" in team-a.
	tenantCfg *rest.Config
	tenant    client.Client
	scheme    *k8sruntime.Scheme
	operator  *process
	// metricsPort is the operator's (secure) metrics server on 127.0.0.1.
	metricsPort  int
	allocatorBin string
	bridgeBin    string
	report       *report
}

// requireEnv returns an environment variable the suite needs; without it
// the test skips, or fails when SHARDWISE_REQUIRE_ATTACK is set.
func requireEnv(t *testing.T, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set: " + how
		if os.Getenv("SHARDWISE_REQUIRE_ATTACK") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if strings.HasSuffix(name, "_BIN") {
		if _, err := os.Stat(v); err != nil {
			t.Fatalf("%s=%s: %v", name, v, err)
		}
	}
	return v
}

// tenantRules are the tenant's rights in team-a, and all it has.
var tenantRules = []rbacv1.PolicyRule{
	{
		APIGroups: []string{"opentelemetry.io"},
		Resources: []string{"opentelemetrycollectors", "targetallocators", "instrumentations"},
		Verbs:     []string{"create", "get", "list", "watch", "update", "patch", "delete"},
	},
	{
		APIGroups: []string{"monitoring.coreos.com"},
		Resources: []string{"servicemonitors", "podmonitors", "scrapeconfigs", "probes"},
		Verbs:     []string{"create", "get", "list", "watch", "update", "patch", "delete"},
	},
	{
		APIGroups: []string{""},
		Resources: []string{"pods"},
		Verbs:     []string{"create", "get", "list", "watch", "update", "patch", "delete"},
	},
}

// setUp starts the control plane with the repository's CRDs, the monitoring
// CRDs and the pod webhook configuration (envtest points it at a local TLS
// port and writes the serving certificate the API server trusts), installs
// the admission policy and the operator's RBAC, creates the namespaces and
// the tenant, and starts the operator binary as its ServiceAccount with the
// platform team's flags, serving that webhook.
func setUp(t *testing.T, operatorBin, allocatorBin string) *suite {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	root := testenv.Root()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), testenv.MonitoringCRDs()},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")}},
	}
	cfg, err := env.Start()
	require.NoError(t, err, "start envtest")
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	scheme, err := controller.NewScheme()
	require.NoError(t, err)
	s := &suite{env: env, cfg: cfg, scheme: scheme, allocatorBin: allocatorBin, report: &report{}}
	s.admin, err = client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	s.kube, err = kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()

	for _, ns := range []string{teamA, teamB, platform, kubeSystem, operatorNS} {
		err := s.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err, "namespace %s", ns)
		}
	}
	s.installPolicy(t, filepath.Join(root, "config", "policy", "tenant-rights.yaml"))

	// The operator: its generated ClusterRole bound to its ServiceAccount,
	// and the ClusterRole it binds allocators to for Secrets.
	role := readClusterRole(t, filepath.Join(root, "config", "rbac", "role.yaml"))
	require.NoError(t, s.admin.Create(ctx, role))
	require.NoError(t, s.admin.Create(ctx, readClusterRole(t, filepath.Join(root, "config", "rbac", "targetallocator_secret_reader.yaml"))))
	require.NoError(t, s.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNS, Name: operatorSA}}))
	require.NoError(t, s.admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: operatorSA},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNS, Name: operatorSA}},
	}))

	// The tenant.
	s.grant(t, teamA, "tenant", tenantUser, tenantRules...)
	user, err := env.AddUser(envtest.User{Name: tenantUser}, cfg)
	require.NoError(t, err)
	s.tenantCfg = user.Config()
	s.tenantCfg.WarningHandlerWithContext = rest.NoWarnings{}
	s.tenant, err = client.New(s.tenantCfg, client.Options{Scheme: scheme})
	require.NoError(t, err)

	// The operator binary, as its ServiceAccount, with the flags a platform
	// team would set: allocators of platform may be granted rights across
	// namespaces, nobody else's; metrics only to authorized clients.
	wh := env.WebhookInstallOptions
	probe := freePort(t)
	s.metricsPort = freePort(t)
	args := []string{
		clusterWide,
		bridgeClusterWide,
		"--metrics-secure",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(s.metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
		"--webhook-cert-management=none",
		"--webhook-cert-dir=" + wh.LocalServingCertDir,
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(wh.LocalServingPort),
		"--log-format=text",
	}
	// Extra flags, for a run that shows the attacks succeeding against a
	// weaker configuration (e.g. upstream's --allow-cross-namespace-references).
	args = append(args, strings.Fields(os.Getenv("SHARDWISE_ATTACK_OPERATOR_ARGS"))...)
	s.report.operatorArgs = args
	kubeconfig := s.serviceAccountKubeconfig(t, operatorNS, operatorSA)
	s.operator = start(t, "operator", operatorBin, args, "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+operatorNS)
	s.operator.waitHTTP(t, "http://127.0.0.1:"+strconv.Itoa(probe)+"/readyz", nil)
	s.waitPolicy(t)
	return s
}

// installPolicy creates the ValidatingAdmissionPolicy and its binding as
// the file ships them.
func (s *suite) installPolicy(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, into := range []any{&policy, &binding} {
		require.NoError(t, dec.Decode(into))
	}
	var rest unstructured.Unstructured
	require.ErrorIs(t, dec.Decode(&rest), io.EOF, "the file holds the policy and its binding only")
	require.NoError(t, s.admin.Create(t.Context(), &policy))
	require.NoError(t, s.admin.Create(t.Context(), &binding))
}

// waitPolicy waits until the API server enforces the policy (it compiles a
// new policy and learns of its binding asynchronously): until the tenant's
// collector with an Ingress is refused. What is admitted meanwhile is
// deleted.
func (s *suite) waitPolicy(t *testing.T) {
	t.Helper()
	doc := collectorYAML("policy-probe", "deployment", "  ingress: {type: ingress, hostname: probe.example.com}\n")
	eventually(t, waitFor, "the admission policy refuses a tenant's Ingress", func() error {
		u, err := s.createYAML(t, s.tenant, teamA, doc)
		if err == nil {
			require.NoError(t, client.IgnoreNotFound(s.admin.Delete(t.Context(), u)))
			return errors.New("admitted: the policy is not in force yet")
		}
		if !strings.Contains(err.Error(), "may not create ingresses.networking.k8s.io") {
			return fmt.Errorf("refused for another reason: %w", err)
		}
		return nil
	})
}

func readClusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.UnmarshalStrict(b, &role))
	return &role
}

// grant creates a Role name with rules in ns, bound to user.
func (s *suite) grant(t *testing.T, ns, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, s.admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}))
	require.NoError(t, s.admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}))
}

// token returns a token of a ServiceAccount from the TokenRequest API.
func (s *suite) token(t *testing.T, ns, sa string) string {
	t.Helper()
	tok, err := s.kube.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	require.NoError(t, err, "token of %s/%s", ns, sa)
	return tok.Status.Token
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount ns/sa, as its pod's mounted token would.
func (s *suite) serviceAccountKubeconfig(t *testing.T, ns, sa string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: s.cfg.Host, CertificateAuthorityData: s.cfg.CAData}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: s.token(t, ns, sa)}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: sa}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

// serviceAccountAllowed asks the API server (SubjectAccessReview) whether
// ServiceAccount ns/sa may do verb on resource ("resource.group" for a
// named group) in namespace in.
func (s *suite) serviceAccountAllowed(t *testing.T, ns, sa, verb, resource, in string) *authorizationv1.SubjectAccessReviewStatus {
	t.Helper()
	res, group, _ := strings.Cut(resource, ".")
	sar, err := s.kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: in, Verb: verb, Group: group, Resource: res},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &sar.Status
}

// createYAML creates the object of doc in ns through c.
func (s *suite) createYAML(t *testing.T, c client.Client, ns, doc string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	u.SetNamespace(ns)
	return u, c.Create(t.Context(), u)
}

// collectorYAML is a minimal collector with extra spec lines.
func collectorYAML(name, mode, extra string) string {
	return fmt.Sprintf(`
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: %s
spec:
  mode: %s
  config:
    receivers: {otlp: {protocols: {grpc: {}}}}
    exporters: {debug: {}}
    service: {pipelines: {traces: {receivers: [otlp], exporters: [debug]}}}
%s`, name, mode, extra)
}

// warningEvent waits for a Warning event in ns regarding the object name
// whose note contains substr, and returns its reason and note.
func (s *suite) warningEvent(t *testing.T, ns, name, substr string) (reason, note string) {
	t.Helper()
	eventually(t, waitFor, "a Warning event on "+ns+"/"+name, func() error {
		var list eventsv1.EventList
		if err := s.admin.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, substr) {
				reason, note = e.Reason, e.Note
				return nil
			}
		}
		return fmt.Errorf("none of the %d events in %s is a Warning on %s containing %q", len(list.Items), ns, name, substr)
	})
	return reason, note
}

// eventually is testenv.Eventually.
var eventually = testenv.Eventually

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a binary under test.
type process struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
	once sync.Once
}

// start starts bin with args and extra environment, stopped at the end of
// the test.
func start(t *testing.T, name, bin string, args []string, env ...string) *process {
	t.Helper()
	p := &process{name: name, log: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	require.NoError(t, p.cmd.Start(), "start %s", bin)
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, p.log.tail(30))
		}
	})
	return p
}

// stop sends SIGTERM, waits, and kills after stopGrace.
func (p *process) stop(t *testing.T) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			if err != nil {
				t.Logf("%s exited: %v", p.name, err)
			}
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			err := <-p.done
			t.Errorf("%s did not stop within %s of SIGTERM (killed: %v)", p.name, stopGrace, err)
		}
	})
}

// waitHTTP polls url until it answers 200, failing with the process's log
// when it does not within waitFor or the process exits. It returns the
// body; hc nil is a plain client.
func (p *process) waitHTTP(t *testing.T, url string, hc *http.Client) []byte {
	t.Helper()
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Second}
	}
	deadline := time.Now().Add(waitFor)
	var last string
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited (%v):\n%s", p.name, err, p.log.tail(40))
		default:
		}
		code, body, err := get(t.Context(), hc, url, "")
		if err == nil && code == http.StatusOK {
			return body
		}
		last = fmt.Sprintf("%d %s %v", code, truncate(body, 300), err)
		time.Sleep(pollEvery)
	}
	t.Fatalf("%s: %s not 200 within %s; last: %s\nlog:\n%s", p.name, url, waitFor, last, p.log.tail(40))
	return nil
}

// rss is the process's resident set size in bytes (VmRSS).
func (p *process) rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err, "VmRSS: %q", v)
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// get sends a GET with an optional bearer token.
func get(ctx context.Context, hc *http.Client, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// insecureClient talks HTTPS to a server whose certificate it does not
// check (the operator's self-signed metrics certificate): the test is about
// who the server lets in.
func insecureClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // the server's identity is not under test
	}}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
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
