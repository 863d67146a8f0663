package allocator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/testenv"
)

// outageProxy forwards TCP to the API server; down cuts every connection
// and refuses new ones until up: to the allocator, the API server is gone,
// while the test can still change objects through its own client.
type outageProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex // guards ln and conns
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newOutageProxy(t *testing.T, target string) *outageProxy {
	p := &outageProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(func() {
		p.down()
		p.wg.Wait()
	})
	return p
}

func (p *outageProxy) up() {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	require.NoError(p.t, err)
	p.addr = ln.Addr().String()
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			p.wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer p.wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(c, s)
			go pipe(s, c)
		}
	}()
}

func (p *outageProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// outageFixture creates, in namespace "fault", two Ready collector pods, a
// Service with an EndpointSlice of initial endpoints and a ServiceMonitor
// selecting it, and writes an allocator config that reaches the API server
// through an outageProxy. It returns the config's path, the proxy, a
// client that bypasses the proxy and the endpoints builder.
func outageFixture(t *testing.T, cfg *rest.Config, ns string, initial int) (path string, proxy *outageProxy, kube kubernetes.Interface, endpoints func(int) []discoveryv1.Endpoint) {
	t.Helper()
	ctx := t.Context()
	kube = clientIn(t, cfg, ns)
	for _, name := range []string{"collector-0", "collector-1"} {
		readyPod(t, kube, ns, name, map[string]string{"app": "collector"}, "")
	}
	_, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 8080}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	endpoints = func(n int) []discoveryv1.Endpoint {
		out := make([]discoveryv1.Endpoint, n)
		for i := range out {
			out[i] = discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}
		}
		return out
	}
	_, err = kube.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints(initial),
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](8080)}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var sm map[string]any
	require.NoError(t, sigsyaml.Unmarshal([]byte(`apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: metrics}]
`), &sm))
	c, err := ctrlclient.New(cfg, ctrlclient.Options{})
	require.NoError(t, err)
	monitor := &unstructured.Unstructured{Object: sm}
	monitor.SetNamespace(ns)
	require.NoError(t, c.Create(ctx, monitor))

	apiURL, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	proxy = newOutageProxy(t, apiURL.Host)
	viaProxy := rest.CopyConfig(cfg)
	viaProxy.Host = "https://" + proxy.addr
	path = filepath.Join(t.TempDir(), "ta.yaml")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, `
listen_addr: 127.0.0.1:0
kube_config_file_path: %[1]s
collector_namespace: %[2]s
collector_selector: {matchLabels: {app: collector}}
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
  service_monitor_namespace_selector: {matchLabels: {kubernetes.io/metadata.name: %[2]s}}
`, testenv.WriteKubeconfig(t, viaProxy), ns), 0o600))
	return path, proxy, kube, endpoints
}

// TestAPIServerOutage is issue 11's fault proof a: the allocator with
// Kubernetes SD (a ServiceMonitor through prometheus-operator's generator)
// and pod-discovered collectors loses the API server for an outage
// (SHARDWISE_FAULT_OUTAGE, 5s by default; the figure uses 30s).
// During it every response still serves the last good assignment: the job
// is never absent or empty, no target is lost or doubled. A target added
// during the outage is served after it; the time to converge is logged.
func TestAPIServerOutage(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	outage := 5 * time.Second
	if s := os.Getenv("SHARDWISE_FAULT_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err)
		outage = d
	}
	ctx := t.Context()
	const initial = 20
	const ns = "fault"
	path, proxy, kube, endpoints := outageFixture(t, cfg, ns, initial)
	base, _ := start(t, path)
	const job = "serviceMonitor/fault/web/0"

	// served returns the distinct targets served for the job and how many
	// were served to more than one collector, from one response.
	served := func() (map[string]bool, int, error) {
		code, body := status(t, base+"/jobs/"+url.QueryEscape(job)+"/targets")
		if code != http.StatusOK {
			return nil, 0, fmt.Errorf("status %d: %s", code, body)
		}
		var by map[string]struct {
			Targets []struct {
				Targets []string `json:"targets"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(body), &by); err != nil {
			return nil, 0, err
		}
		out, doubled := map[string]bool{}, 0
		for _, v := range by {
			for _, g := range v.Targets {
				for _, a := range g.Targets {
					if out[a] {
						doubled++
					}
					out[a] = true
				}
			}
		}
		return out, doubled, nil
	}
	eventually(t, func() bool { s, _, err := served(); return err == nil && len(s) == initial })

	proxy.down()
	downAt := time.Now()
	// A change the allocator cannot see until the API server is back.
	_, err := kube.DiscoveryV1().EndpointSlices(ns).Update(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   endpoints(initial + 1),
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To[int32](8080)}},
	}, metav1.UpdateOptions{})
	require.NoError(t, err)
	var lost, doubled, polls int
	check := func() int {
		s, d, err := served()
		require.NoError(t, err, "a response during or after the outage")
		code, body := status(t, base+"/scrape_configs")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, job, "the job is served during the outage")
		polls++
		doubled += d
		if len(s) < initial {
			lost = max(lost, initial-len(s))
		}
		return len(s)
	}
	for time.Since(downAt) < outage {
		check()
		time.Sleep(50 * time.Millisecond)
	}
	proxy.up()
	upAt := time.Now()
	for check() != initial+1 {
		require.Less(t, time.Since(upAt), 2*time.Minute, "no convergence within 2 minutes after the outage")
		time.Sleep(50 * time.Millisecond)
	}
	converge := time.Since(upAt)
	t.Logf("API server outage %s: converged %.1fs after it ended; targets lost %d, doubled %d, over %d polls", outage, converge.Seconds(), lost, doubled, polls)
	require.Zero(t, lost, "targets lost")
	require.Zero(t, doubled, "targets doubled")
}

// TestStopDuringAPIServerOutage stops the allocator while the API server has
// been unreachable long enough for every reflector to be in its retry
// backoff (client-go's grows to 30 s). Run must still return promptly: with
// client-go's streaming lists (WatchListClient), a reflector sleeps that
// backoff without watching its stop channel (reflector.go, watchList), which
// held a stopping allocator for up to a minute; the allocator turns that
// feature off (see clientgo.go).
func TestStopDuringAPIServerOutage(t *testing.T) {
	t.Parallel()
	cfg := testenv.Require(t, env)
	path, proxy, _, _ := outageFixture(t, cfg, "fault-stop", 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			ConfigFile: path,
			Registry:   prometheus.NewRegistry(),
			Ready:      func(addr string) { ready <- addr },
		})
	}()
	select {
	case addr := <-ready:
		eventually(t, func() bool { return !strings.HasPrefix(get(t, "http://"+addr+"/readyz"), "status ") })
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	}
	proxy.down()
	// Each reflector's retries back off 0.8 s, 1.6 s, 3.2 s, 6.4 s, 12.8 s
	// (each up to twice that with jitter): after 20 s every one sleeps.
	time.Sleep(20 * time.Second)
	stopping := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
		t.Logf("Run returned %.1fs after cancel, the API server down", time.Since(stopping).Seconds())
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel while the API server was down")
	}
}
