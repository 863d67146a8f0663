package cluster

import (
	"context"
	"fmt"
	"time"

	monitoringclient "github.com/prometheus-operator/prometheus-operator/pkg/client/versioned"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clients talk to the API server as fast as it answers: no client-side
// rate limit, protobuf for the built-in kinds.
type clients struct {
	kube kubernetes.Interface
	mon  monitoringclient.Interface
}

func newClients(cfg *rest.Config) (*clients, error) {
	fast := rest.CopyConfig(cfg)
	fast.QPS, fast.Burst = -1, 0
	fast.UserAgent = "shardwise-clusterload"
	proto := rest.CopyConfig(fast)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(proto)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	mon, err := monitoringclient.NewForConfig(fast)
	if err != nil {
		return nil, fmt.Errorf("monitoring client: %w", err)
	}
	return &clients{kube: kube, mon: mon}, nil
}

// parallel runs fn(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(ctx context.Context, workers, n int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// createPod creates a pod and marks it running and ready through the status
// subresource, as the kubelet would.
func (c *clients) createPod(ctx context.Context, p *corev1.Pod, ip, node string) error {
	created, err := c.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	names := make([]string, len(p.Spec.Containers))
	for i, ct := range p.Spec.Containers {
		names[i] = ct.Name
	}
	qos := created.Status.QOSClass // set by the API server, immutable
	created.Status = RunningStatus(ip, node, names...)
	created.Status.QOSClass = qos
	if _, err := c.kube.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("mark pod %s/%s ready: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// PopulateStats are what creating the cluster took.
type PopulateStats struct {
	Seconds        float64 `json:"seconds"`
	Pods           int     `json:"pods"` // workload and collector pods
	Services       int     `json:"services"`
	EndpointSlices int     `json:"endpointslices"`
	Monitors       int     `json:"servicemonitors"`
	// WritesPerSecond counts every create and status update.
	WritesPerSecond float64 `json:"writes_per_second"`
}

// populate creates every object of l through the API with workers
// concurrent requests: namespaces, Services, pods (created, then running
// and ready), EndpointSlices, collector pods and ServiceMonitors.
//
// Without pods (withPods false) the EndpointSlices still name their pods,
// which do not exist: service discovery finds endpoints without pod
// metadata, the shape of a cluster whose endpoints are not pods or of a
// test that creates only EndpointSlices.
func (c *clients) populate(ctx context.Context, l *Layout, workers int, withPods bool, logf func(string, ...any)) (PopulateStats, error) {
	start := time.Now()
	var st PopulateStats
	wls, nss := workloadsAndNamespaces(l)
	for ns := range nss {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return st, fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	if err := c.createServices(ctx, wls, workers); err != nil {
		return st, err
	}
	st.Services = len(wls)
	pods, err := c.createWorkloadPods(ctx, wls, workers, withPods, start, logf)
	if err != nil {
		return st, err
	}
	if st.EndpointSlices, err = c.createEndpointSlices(ctx, wls, workers); err != nil {
		return st, err
	}
	collectors, err := c.createCollectors(ctx, l, workers)
	if err != nil {
		return st, err
	}
	if err := c.createServiceMonitors(ctx, wls, workers); err != nil {
		return st, err
	}
	st.Monitors = len(wls)
	st.Pods = pods + collectors
	st.Seconds = time.Since(start).Seconds()
	writes := 2*st.Pods + st.Services + st.EndpointSlices + st.Monitors + len(nss)
	st.WritesPerSecond = float64(writes) / st.Seconds
	return st, nil
}

// workloadsAndNamespaces lists l's workloads, allocator by allocator, and
// the namespaces of the workloads and the collectors.
func workloadsAndNamespaces(l *Layout) ([]*Workload, map[string]bool) {
	var wls []*Workload
	nss := map[string]bool{}
	for _, a := range l.Allocators {
		nss[a.Namespace] = true
		for _, w := range a.Workloads {
			wls = append(wls, w)
			nss[w.Namespace] = true
		}
	}
	return wls, nss
}

func (c *clients) createServices(ctx context.Context, wls []*Workload, workers int) error {
	return parallel(ctx, workers, len(wls), func(ctx context.Context, i int) error {
		_, err := c.kube.CoreV1().Services(wls[i].Namespace).Create(ctx, wls[i].Service(), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create service %s/%s: %w", wls[i].Namespace, wls[i].Name, err)
		}
		return nil
	})
}

// createWorkloadPods creates the workloads' pods, running and ready, unless
// withPods is false, and returns how many it created; it logs its progress
// every 20,000 pods with the time since start.
func (c *clients) createWorkloadPods(ctx context.Context, wls []*Workload, workers int, withPods bool, start time.Time, logf func(string, ...any)) (int, error) {
	type podRef struct {
		w *Workload
		p Pod
	}
	var pods []podRef
	for _, w := range wls {
		for _, p := range w.Pods {
			if withPods {
				pods = append(pods, podRef{w, p})
			}
		}
	}
	logf("creating %d pods with %d concurrent requests", len(pods), workers)
	return len(pods), parallel(ctx, workers, len(pods), func(ctx context.Context, i int) error {
		if i > 0 && i%20000 == 0 {
			logf("%d pods after %.0fs", i, time.Since(start).Seconds())
		}
		return c.createPod(ctx, pods[i].w.Pod(pods[i].p), pods[i].p.IP, pods[i].p.Node)
	})
}

// createEndpointSlices creates the workloads' EndpointSlices and returns
// how many.
func (c *clients) createEndpointSlices(ctx context.Context, wls []*Workload, workers int) (int, error) {
	var slices []func(ctx context.Context) error
	for _, w := range wls {
		for _, es := range w.EndpointSlices() {
			slices = append(slices, func(ctx context.Context) error {
				if _, err := c.kube.DiscoveryV1().EndpointSlices(es.Namespace).Create(ctx, es, metav1.CreateOptions{FieldManager: "endpointslice-controller"}); err != nil {
					return fmt.Errorf("create endpointslice %s/%s: %w", es.Namespace, es.Name, err)
				}
				return nil
			})
		}
	}
	return len(slices), parallel(ctx, workers, len(slices), func(ctx context.Context, i int) error { return slices[i](ctx) })
}

// createCollectors creates every allocator's collector pods, running and
// ready, and returns how many.
func (c *clients) createCollectors(ctx context.Context, l *Layout, workers int) (int, error) {
	collectors := 0
	for _, a := range l.Allocators {
		if err := parallel(ctx, workers, len(a.Collectors), func(ctx context.Context, i int) error {
			return c.createPod(ctx, a.CollectorPod(a.Collectors[i]), fmt.Sprintf("10.250.%d.%d", i/250, i%250+1), "node-collectors")
		}); err != nil {
			return 0, err
		}
		collectors += len(a.Collectors)
	}
	return collectors, nil
}

func (c *clients) createServiceMonitors(ctx context.Context, wls []*Workload, workers int) error {
	return parallel(ctx, workers, len(wls), func(ctx context.Context, i int) error {
		sm := wls[i].ServiceMonitor()
		if _, err := c.mon.MonitoringV1().ServiceMonitors(sm.Namespace).Create(ctx, sm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create servicemonitor %s/%s: %w", sm.Namespace, sm.Name, err)
		}
		return nil
	})
}

// allocatorRole is what an allocator with prometheus_cr and pod-discovered
// collectors reads: the rights the shardwise operator grants it.
var allocatorRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "services", "endpoints", "namespaces", "nodes", "secrets", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "podmonitors", "probes", "scrapeconfigs"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
}

// grant binds the allocator role to user.
func (c *clients) grant(ctx context.Context, user string) error {
	name := "bench-" + user
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: allocatorRole}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create clusterrole %s: %w", name, err)
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create clusterrolebinding %s: %w", name, err)
	}
	return nil
}
