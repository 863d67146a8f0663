package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	smNamespace = "shardwise-e2e"
	smService   = "app"
	smPortName  = "metrics"
)

// TestServiceMonitor runs the allocator with prometheus_cr against a real
// kube-apiserver (envtest): a ServiceMonitor selects a Service whose
// EndpointSlices point at loopback metrics servers. Every target must be
// scraped exactly once, by its assigned collector, and a target added to the
// cluster later must be picked up.
//
// The API server refuses loopback endpoint IPs, so each EndpointSlice is of
// type FQDN with a name under .onion, which Go never resolves (RFC 7686: no
// DNS query leaves the machine), and the ServiceMonitor's relabeling rewrites
// __address__ to 127.0.0.1 with the slice's port. The receiver applies that
// relabeling itself, so the scrape goes to loopback only; without it the
// scrape fails locally.
// startControlPlane starts envtest (kube-apiserver and etcd, with the
// monitoring CRDs) for the test, or skips it without KUBEBUILDER_ASSETS, and
// returns a client and a cluster-admin kubeconfig file for the allocator.
func startControlPlane(t *testing.T) (client.Client, string) {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		msg := "KUBEBUILDER_ASSETS is not set: run `make test-e2e`, or set it to the directory printed by hack/envtest.sh"
		if os.Getenv("SHARDWISE_REQUIRE_ENVTEST") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	restCfg, err := env.Start()
	require.NoError(t, err, "start envtest control plane from %s", assets)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	// A kubeconfig for the allocator process, as a cluster admin.
	user, err := env.AddUser(envtest.User{Name: "shardwise-e2e", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kubeconfig, err := user.KubeConfig()
	require.NoError(t, err)
	kubeconfigFile := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfigFile, kubeconfig, 0o600))
	k8s, err := client.New(restCfg, client.Options{Scheme: clientgoscheme.Scheme})
	require.NoError(t, err)
	return k8s, kubeconfigFile
}

func TestServiceMonitor(t *testing.T) {
	bin := allocatorBin(t)
	k8s, kubeconfigFile := startControlPlane(t)
	ctx := withTimeout(t, 5*time.Minute)

	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: smNamespace}}))
	require.NoError(t, k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: smService, Namespace: smNamespace, Labels: map[string]string{"app": "shardwise-e2e"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			// The API server makes a headless Service without a selector
			// dual-stack, and Prometheus' endpointslice role (v0.313) leaves
			// out the slices of a dual-stack Service whose address type is
			// not its first IP family, FQDN slices included.
			IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			Ports: []corev1.ServicePort{{
				Name: smPortName, Port: 8080, TargetPort: intstr.FromString(smPortName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}))
	sm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   map[string]any{"name": smService, "namespace": smNamespace},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "shardwise-e2e"}},
			"endpoints": []any{map[string]any{
				"port":          smPortName,
				"path":          "/metrics",
				"interval":      scrapeInterval,
				"scrapeTimeout": scrapeInterval,
				"relabelings": []any{map[string]any{
					"action":       "replace",
					"sourceLabels": []any{"__address__"},
					"regex":        `.+\.onion:([0-9]+)`,
					"targetLabel":  "__address__",
					"replacement":  "127.0.0.1:$1",
				}},
			}},
		},
	}}
	require.NoError(t, k8s.Create(ctx, sm))

	job := fmt.Sprintf("serviceMonitor/%s/%s/0", smNamespace, smService)
	var targets []target
	addTarget := func(i int) {
		tg := startTarget(t, fmt.Sprintf("s%02d", i), job, i)
		_, portStr, err := net.SplitHostPort(tg.addr)
		require.NoError(t, err)
		port, err := strconv.ParseInt(portStr, 10, 32)
		require.NoError(t, err)
		host := fmt.Sprintf("target-%d.shardwise-e2e.onion", i)
		require.NoError(t, k8s.Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      fmt.Sprintf("%s-%d", smService, i),
				Namespace: smNamespace,
				Labels: map[string]string{
					discoveryv1.LabelServiceName: smService,
					discoveryv1.LabelManagedBy:   "shardwise-e2e",
				},
			},
			AddressType: discoveryv1.AddressTypeFQDN,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{host},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			}},
			Ports: []discoveryv1.EndpointPort{{
				Name: ptr.To(smPortName), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP),
			}},
		}))
		// The allocator serves the address as discovered; the receiver
		// relabels it to tg.addr.
		tg.addr = fmt.Sprintf("%s:%d", host, port)
		targets = append(targets, tg)
	}
	for i := range 3 {
		addTarget(i)
	}

	collectors := []string{"collector-0", "collector-1"}
	cfg := allocatorConfig(collectors, []any{})
	cfg["prometheus_cr"] = map[string]any{
		"enabled":                            true,
		"service_monitor_selector":           map[string]any{},
		"service_monitor_namespace_selector": map[string]any{},
	}
	// Both ways the OpenTelemetry Operator's allocator takes a kubeconfig.
	cfg["kube_config_file_path"] = kubeconfigFile
	alloc := startAllocator(t, bin, cfg, "KUBECONFIG="+kubeconfigFile)
	client := newAPI(alloc.url)

	// The job appears once the allocator has read the ServiceMonitor.
	alloc.eventually(t, convergeTimeout, "allocator serves the ServiceMonitor job as the contract says", func() error {
		return client.contract([]string{job}, collectors)
	})

	fleet := startFleet(t, alloc.url, collectors)
	check := func() error {
		owner, err := client.assignment([]string{job}, collectors)
		if err != nil {
			return err
		}
		return expectExclusive(targets, collectors, owner, fleet.recent())
	}
	alloc.eventually(t, convergeTimeout, "ServiceMonitor targets scraped exactly once", check)

	addTarget(3)
	alloc.eventually(t, convergeTimeout, "a new EndpointSlice is discovered, assigned and scraped exactly once", check)
}
