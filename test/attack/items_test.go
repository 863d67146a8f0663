package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// saToken is the path where a pod finds its ServiceAccount token.
const saToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// attackTokenFile (item 1): the tenant's ServiceMonitor names the
// collectors' own ServiceAccount token as its bearer token file, hoping the
// platform's allocator, which reads monitors of every namespace, passes it
// to the collectors (which would then send their token to the tenant's
// pods). The allocator binary runs with the configuration the operator
// rendered and as the ServiceAccount the operator created for it, and its
// /scrape_configs is read: the jobs of team-b's monitor and of the tenant's
// monitor without a file are there, the one with the file is not, and the
// token path appears nowhere.
func attackTokenFile(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	monitor := func(name, ns string, endpoint map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{
				"selector":  map[string]any{"matchLabels": map[string]any{"app": name}},
				"endpoints": []any{endpoint},
			},
		}}
	}
	require.NoError(t, s.admin.Create(ctx, monitor("legit", teamB, map[string]any{"port": "metrics"})))
	// The tenant's monitors that name files of the collectors' pods: their
	// ServiceAccount token, and the client key they present to the
	// allocator with mutual TLS.
	clientCert, clientKey := path.Join(manifests.TLSDir, manifests.TLSCertFile), path.Join(manifests.TLSDir, manifests.TLSKeyFile)
	stealers := []struct{ name, field string }{
		{"steal-token", "bearerTokenFile: " + saToken},
		{"steal-tls-key", "scheme: https, tlsConfig: {certFile: " + clientCert + ", keyFile: " + clientKey + "}"},
	}
	for _, m := range stealers {
		var endpoint map[string]any
		require.NoError(t, yaml.Unmarshal([]byte("{port: metrics, "+m.field+"}"), &endpoint))
		require.NoError(t, s.tenant.Create(ctx, monitor(m.name, teamA, endpoint)), "the tenant may create ServiceMonitors in its namespace")
	}
	// The same tenant's monitor without the file: served, so the allocator
	// reads team-a and the file is what keeps the other one out.
	require.NoError(t, s.tenant.Create(ctx, monitor("plain", teamA, map[string]any{"port": "metrics"})))

	// The platform's allocator: every namespace's monitors, which the
	// operator allows in platform only.
	addr, rendered := s.platformAllocator(t, "platform")
	var conf struct {
		PrometheusCR struct {
			DenyFS *bool `json:"deny_fs_access_through_sms"`
		} `json:"prometheus_cr"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(rendered), &conf))
	require.NotNil(t, conf.PrometheusCR.DenyFS, "the rendered config says deny_fs_access_through_sms:\n%s", rendered)
	require.True(t, *conf.PrometheusCR.DenyFS, "an allocator of every namespace denies monitors that read the collectors' files")

	legit, plain := "serviceMonitor/"+teamB+"/legit/0", "serviceMonitor/"+teamA+"/plain/0"
	var body []byte
	var jobs map[string]json.RawMessage
	hc := &http.Client{Timeout: 5 * time.Second}
	eventually(t, waitFor, "the allocator serves the jobs of the monitors without files", func() error {
		code, b, err := get(ctx, hc, "http://"+addr+"/scrape_configs", "")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/scrape_configs: %d %s", code, truncate(b, 200))
		}
		jobs = nil
		if err := json.Unmarshal(b, &jobs); err != nil {
			return fmt.Errorf("/scrape_configs: %w", err)
		}
		for _, job := range []string{legit, plain} {
			if _, ok := jobs[job]; !ok {
				return fmt.Errorf("no job %s among %v", job, slices.Sorted(maps.Keys(jobs)))
			}
		}
		body = b
		return nil
	})
	for job := range jobs {
		for _, m := range stealers {
			require.False(t, strings.HasPrefix(job, "serviceMonitor/"+teamA+"/"+m.name+"/"), "the tenant's job %s is served", job)
		}
	}
	for _, file := range []string{saToken, clientCert, clientKey} {
		require.NotContains(t, string(body), file, "a file of the collectors' pods reaches them as a scrape setting")
	}

	// What stopped them, as the allocator reports it.
	invalid := ""
	want := `shardwise_allocator_invalid_resources{kind="ServiceMonitor"} ` + strconv.Itoa(len(stealers))
	eventually(t, waitFor, "the allocator counts the tenant's monitors as invalid", func() error {
		_, b, err := get(ctx, hc, "http://"+addr+"/metrics", "")
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, `shardwise_allocator_invalid_resources{kind="ServiceMonitor"} `) {
				invalid = line
			}
		}
		if invalid != want {
			return fmt.Errorf("%q, want %q", invalid, want)
		}
		return nil
	})
	served := strings.Join(slices.Sorted(maps.Keys(jobs)), ", ")
	for _, m := range stealers {
		stopped := fmt.Sprintf("the allocator, by the operator's rendered `deny_fs_access_through_sms: true`: metric `%s`", invalid)
		if note, ok := s.findWarning(t, teamA, m.name, 10*time.Second); ok {
			stopped += "; Warning event " + note
		} else {
			stopped += "; no Warning event on the monitor within 10 s"
		}
		r.record(fmt.Sprintf("ServiceMonitor %s/%s with `%s`, read by the allocator of %s (every namespace)", teamA, m.name, m.field, platform),
			fmt.Sprintf("job absent from the allocator's /scrape_configs (jobs served: %s); the file paths appear nowhere in it", served),
			stopped)
	}
}

// platformAllocator creates the TargetAllocator name in platform, reading
// the monitors of every namespace (which the operator grants in platform
// only), and runs the allocator binary with the configuration the operator
// rendered for it, as the ServiceAccount the operator made for it, on
// 127.0.0.1 until the test ends. It returns the allocator's address, once
// ready, and the rendered configuration.
func (s *suite) platformAllocator(t *testing.T, name string) (addr, rendered string) {
	t.Helper()
	ctx := t.Context()
	ta, err := s.createYAML(t, s.admin, platform, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: `+name+`
spec:
  prometheusCR:
    enabled: true
    serviceMonitorSelector: {}
    serviceMonitorNamespaceSelector: {}
    scrapeConfigSelector: {}
    scrapeConfigNamespaceSelector: {}
`)
	require.NoError(t, err)
	cond := s.readyCondition(t, platform, ta.GetName())
	require.Equal(t, metav1.ConditionTrue, cond.Status, "the platform's allocator is granted every namespace: %s %s", cond.Reason, cond.Message)

	full := manifests.TargetAllocatorName(ta.GetName())
	var cm corev1.ConfigMap
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: full}, &cm))
	rendered = cm.Data[manifests.TargetAllocatorConfigKey]
	require.NotEmpty(t, rendered, "ConfigMap %s/%s holds %s", platform, full, manifests.TargetAllocatorConfigKey)
	var dep appsv1.Deployment
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: full}, &dep))
	sa := dep.Spec.Template.Spec.ServiceAccountName
	require.NotEmpty(t, sa)
	// The allocator may read the tenant's monitors: the grant does not stop
	// an attack, the allocator has to.
	require.True(t, s.serviceAccountAllowed(t, platform, sa, "list", "servicemonitors.monitoring.coreos.com", teamA).Allowed,
		"the platform's allocator reads team-a's ServiceMonitors")

	confFile := filepath.Join(t.TempDir(), manifests.TargetAllocatorConfigKey)
	require.NoError(t, os.WriteFile(confFile, []byte(rendered), 0o600))
	addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	alloc := start(t, "allocator", s.allocatorBin, []string{
		"--config-file=" + confFile, "--listen-addr=" + addr,
		"--kubeconfig-path=" + s.serviceAccountKubeconfig(t, platform, sa),
	})
	alloc.waitHTTP(t, "http://"+addr+"/readyz", nil)
	return addr, rendered
}

// attackGrants (item 2): the tenant's TargetAllocator asks for Secrets of
// kube-system, for another tenant's namespace, or for every namespace. The
// operator refuses each with a condition and a Warning event, and its
// ServiceAccount gets nothing there. The same tenant's allocator of its own
// namespace is granted what it needs, so the refusals are the operator's
// doing.
func attackGrants(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	ta := func(name, prometheusCR string) string {
		return "apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: " + name + "}\nspec:\n  prometheusCR: " + prometheusCR + "\n"
	}
	type check struct {
		verb, resource, ns string
	}
	for _, tc := range []struct {
		name, attempt, doc string
		denied             []check
	}{
		{"read-kube-system", "TargetAllocator with `prometheusCR.secretNamespaces: [kube-system]`",
			ta("read-kube-system", "{enabled: true, allowNamespaces: [team-a], secretNamespaces: [kube-system]}"),
			[]check{{"get", "secrets", kubeSystem}, {"list", "secrets", kubeSystem}}},
		{"watch-team-b", "TargetAllocator with `prometheusCR.allowNamespaces: [team-a, team-b]`",
			ta("watch-team-b", "{enabled: true, allowNamespaces: [team-a, team-b]}"),
			[]check{{"list", "pods", teamB}, {"list", "servicemonitors.monitoring.coreos.com", teamB}, {"get", "secrets", teamB}}},
		{"every-namespace", "TargetAllocator with `prometheusCR` and no `allowNamespaces` (every namespace)",
			ta("every-namespace", "{enabled: true, serviceMonitorSelector: {}}"),
			[]check{{"list", "pods", teamB}, {"list", "servicemonitors.monitoring.coreos.com", kubeSystem}}},
		{"via-collector", "collector with `targetAllocator: {enabled: true, prometheusCR: {enabled: true, secretNamespaces: [kube-system]}}` (the operator creates the TargetAllocator)",
			collectorWithAllocator("via-collector", "{enabled: true, secretNamespaces: [kube-system]}"),
			[]check{{"get", "secrets", kubeSystem}}},
	} {
		_, err := s.createYAML(t, s.tenant, teamA, tc.doc)
		require.NoError(t, err, "the tenant may create collectors and TargetAllocators")
		cond := s.readyCondition(t, teamA, tc.name)
		require.Equal(t, metav1.ConditionFalse, cond.Status, "%s: %s", tc.name, cond.Message)
		require.Equal(t, "GrantNotAllowed", cond.Reason)
		require.Contains(t, cond.Message, "--target-allocator-cluster-wide-namespaces")
		reason, note := s.warningEvent(t, teamA, tc.name, "--target-allocator-cluster-wide-namespaces")
		require.Equal(t, "GrantNotAllowed", reason)
		sa := manifests.TargetAllocatorName(tc.name)
		var sars []string
		for _, c := range tc.denied {
			st := s.serviceAccountAllowed(t, teamA, sa, c.verb, c.resource, c.ns)
			require.False(t, st.Allowed, "%s may %s %s in %s", sa, c.verb, c.resource, c.ns)
			sars = append(sars, fmt.Sprintf("%s %s in %s: %s", c.verb, c.resource, c.ns, sarVerdict(st)))
		}
		event := "Warning event " + reason + ": " + note
		if note == cond.Message {
			event = "Warning event " + reason + " with the same message"
		}
		r.record(tc.attempt,
			fmt.Sprintf("Ready=%s, reason %s", cond.Status, cond.Reason),
			fmt.Sprintf("the operator: condition message %q; %s; SubjectAccessReviews for system:serviceaccount:%s:%s: %s",
				cond.Message, event, teamA, sa, strings.Join(sars, "; ")))
	}

	// The control: its own namespace is granted, through the same operator.
	_, err := s.createYAML(t, s.tenant, teamA, ta("own", "{enabled: true, allowNamespaces: [team-a]}"))
	require.NoError(t, err)
	cond := s.readyCondition(t, teamA, "own")
	require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
	require.True(t, s.serviceAccountAllowed(t, teamA, manifests.TargetAllocatorName("own"), "list", "pods", teamA).Allowed,
		"an allocator of its own namespace lists its pods")
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: teamA, Name: manifests.TargetAllocatorName("own")}, &corev1.ServiceAccount{}))
}

// collectorWithAllocator is a collector whose allocator the operator
// creates, with prometheusCR as given.
func collectorWithAllocator(name, prometheusCR string) string {
	return fmt.Sprintf(`
apiVersion: opentelemetry.io/v1beta1
kind: OpenTelemetryCollector
metadata:
  name: %s
spec:
  mode: statefulset
  targetAllocator:
    enabled: true
    prometheusCR: %s
  config:
    receivers:
      prometheus:
        config:
          scrape_configs:
          - job_name: self
            static_configs: [{targets: ['127.0.0.1:8888']}]
    exporters: {debug: {}}
    service: {pipelines: {metrics: {receivers: [prometheus], exporters: [debug]}}}
`, name, prometheusCR)
}

// sarVerdict is a SubjectAccessReview's answer in words.
func sarVerdict(st *authorizationv1.SubjectAccessReviewStatus) string {
	v := fmt.Sprintf("allowed=%t", st.Allowed)
	if st.Denied {
		v += ", denied"
	}
	if st.Reason != "" {
		v += " (" + st.Reason + ")"
	}
	return v
}

// readyCondition waits for the TargetAllocator's Ready condition of its
// current generation.
func (s *suite) readyCondition(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	return s.readyOf(t, "TargetAllocator", ns, name)
}

// readyOf waits for the Ready condition of the current generation of the
// opentelemetry.io resource kind ns/name (a TargetAllocator, an
// OpAMPBridge: both report status.observedGeneration).
func (s *suite) readyOf(t *testing.T, kind, ns, name string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	eventually(t, waitFor, "Ready condition of "+kind+" "+ns+"/"+name, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
		if err := s.admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		var status struct {
			ObservedGeneration int64              `json:"observedGeneration"`
			Conditions         []metav1.Condition `json:"conditions"`
		}
		raw, _, _ := unstructured.NestedMap(u.Object, "status")
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return err
		}
		c := meta.FindStatusCondition(status.Conditions, "Ready")
		if c == nil || status.ObservedGeneration != u.GetGeneration() {
			return fmt.Errorf("no Ready condition of generation %d: %v", u.GetGeneration(), status.Conditions)
		}
		cond = c
		return nil
	})
	return cond
}

// podEvent waits for a Warning event of the pod webhook in ns about pod
// name (the webhook's events regard the pod's owner or namespace, the pod
// being not yet created, and name it in their note) whose note contains
// substr, and returns its reason and note.
func (s *suite) podEvent(t *testing.T, ns, name, substr string) (reason, note string) {
	t.Helper()
	eventually(t, waitFor, "a Warning event about pod "+ns+"/"+name, func() error {
		var list eventsv1.EventList
		if err := s.admin.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Note, "pod "+name+":") && strings.Contains(e.Note, substr) {
				reason, note = e.Reason, e.Note
				return nil
			}
		}
		return fmt.Errorf("none of the %d events in %s is a Warning about pod %s containing %q", len(list.Items), ns, name, substr)
	})
	return reason, note
}

// findWarning looks for a Warning event in ns on name for up to d.
func (s *suite) findWarning(t *testing.T, ns, name string, d time.Duration) (string, bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		var list eventsv1.EventList
		require.NoError(t, s.admin.List(t.Context(), &list, client.InNamespace(ns)))
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
				return e.Reason + ": " + e.Note, true
			}
		}
		time.Sleep(pollEvery)
	}
	return "", false
}

// warnings collects the admission warnings of the requests of one client.
type warnings struct {
	mu   sync.Mutex // guards list
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.list)
}

// withWarnings is a client of cfg whose requests' warnings land in w.
func (s *suite) withWarnings(t *testing.T, cfg *rest.Config) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	c := rest.CopyConfig(cfg)
	c.WarningHandlerWithContext = w
	cl, err := client.New(c, client.Options{Scheme: s.scheme})
	require.NoError(t, err)
	return cl, w
}

// injectionAnnotations name team-b's sidecar collector and Instrumentation.
var injectionAnnotations = map[string]string{
	"sidecar.opentelemetry.io/inject":              teamB + "/sidecar-b",
	"instrumentation.opentelemetry.io/inject-java": teamB + "/java-b",
}

func appPod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
}

// injected names what the webhook added to pod: the sidecar, init
// containers, and the app container's Java agent and OTLP environment.
func injected(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		if c.Name != "app" {
			out = append(out, "container "+c.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		out = append(out, "init container "+c.Name)
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "JAVA_TOOL_OPTIONS" || strings.HasPrefix(e.Name, "OTEL_") {
				out = append(out, c.Name+" env "+e.Name)
			}
		}
	}
	return out
}

// setUpTeamB creates team-b's sidecar collector and Java Instrumentation
// once, and proves the webhook injects them into team-b's own pods.
func (s *suite) setUpTeamB(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	var inst unstructured.Unstructured
	inst.SetAPIVersion("opentelemetry.io/v1alpha1")
	inst.SetKind("Instrumentation")
	if err := s.admin.Get(ctx, client.ObjectKey{Namespace: teamB, Name: "java-b"}, &inst); err == nil {
		return
	}
	_, err := s.createYAML(t, s.admin, teamB, collectorYAML("sidecar-b", "sidecar", ""))
	require.NoError(t, err)
	_, err = s.createYAML(t, s.admin, teamB, `
apiVersion: opentelemetry.io/v1alpha1
kind: Instrumentation
metadata:
  name: java-b
spec:
  exporter: {endpoint: "http://collector.team-b.svc:4318"}
`)
	require.NoError(t, err)
	// The control: team-b's own pod gets both, so the webhook is reached
	// and injects when the reference is allowed. The cache may see the new
	// resources a moment after their creation.
	eventually(t, waitFor, "team-b's pod gets team-b's sidecar and Java agent", func() error {
		pod := appPod(teamB, "control-"+strconv.FormatInt(time.Now().UnixNano(), 36), map[string]string{
			"sidecar.opentelemetry.io/inject": "sidecar-b", "instrumentation.opentelemetry.io/inject-java": "java-b",
		})
		if err := s.admin.Create(ctx, pod); err != nil {
			return err
		}
		got := injected(pod)
		sidecar := slices.Contains(got, "container otc-container") || slices.Contains(got, "init container otc-container")
		if !sidecar || !slices.Contains(got, "app env JAVA_TOOL_OPTIONS") {
			return fmt.Errorf("team-b's pod got %v", got)
		}
		return nil
	})
}

// attackCrossNamespaceInjection (item 7): the tenant's pod names team-b's
// sidecar collector and Instrumentation, hoping for their configuration
// (exporter endpoints and headers, environment) read with the operator's
// rights. The webhook admits it unchanged and says why.
func attackCrossNamespaceInjection(t *testing.T, s *suite, r recorder) {
	s.setUpTeamB(t)
	c, w := s.withWarnings(t, s.tenantCfg)
	pod := appPod(teamA, "borrow-team-b", injectionAnnotations)
	require.NoError(t, c.Create(t.Context(), pod), "the tenant may create pods")
	require.Empty(t, injected(pod), "the tenant's pod got team-b's injection")
	var refusals []string
	for _, msg := range w.all() {
		if strings.Contains(msg, "cross-namespace reference refused") {
			refusals = append(refusals, msg)
		}
	}
	require.Len(t, refusals, 2, "an admission warning per refused reference: %v", w.all())
	require.True(t, slices.ContainsFunc(refusals, func(m string) bool { return strings.Contains(m, teamB+"/sidecar-b") }), refusals)
	require.True(t, slices.ContainsFunc(refusals, func(m string) bool { return strings.Contains(m, teamB+"/java-b") }), refusals)
	reason, note := s.podEvent(t, teamA, pod.Name, "cross-namespace reference refused")
	r.record(fmt.Sprintf("pod %s/%s annotated `sidecar.opentelemetry.io/inject: %s/sidecar-b` and `instrumentation.opentelemetry.io/inject-java: %s/java-b`", teamA, pod.Name, teamB, teamB),
		fmt.Sprintf("admitted unchanged: containers %v, no init containers, no JAVA_TOOL_OPTIONS or OTEL_* (team-b's own pod gets both)", containerNames(pod)),
		fmt.Sprintf("pod webhook; admission warnings: %s; Warning event %s: %s", strings.Join(refusals, " / "), reason, note))
}

// ownedBy makes a ReplicaSet named rs the pod's controller (one that does
// not exist: nothing here collects garbage).
func ownedBy(pod *corev1.Pod, rs string) *corev1.Pod {
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: types.UID(rs + "-uid"),
		Controller: new(true),
	}}
	return pod
}

func containerNames(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

// attackConfigMapMemory (item 8): ConfigMaps labelled as the operator's are
// cached by it. The tenant cannot create ConfigMaps at all; a more
// privileged user who can creates 200 of 1 MB, and the operator's resident
// memory grows by far less than the data: its cache keeps their metadata
// only.
func attackConfigMapMemory(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	const count, size = 200, 1_000_000
	blob := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: fmt.Sprintf("fill-%03d", i),
				Labels: map[string]string{manifests.LabelManagedBy: manifests.ManagedBy}},
			Data: map[string]string{"blob": strconv.Itoa(i) + strings.Repeat("x", size)},
		}
	}
	err := s.tenant.Create(ctx, blob(0))
	require.Error(t, err)
	require.True(t, apierrors.IsForbidden(err), "%v", err)
	r.record(fmt.Sprintf("the tenant creates a ConfigMap labelled `%s: %s` in %s", manifests.LabelManagedBy, manifests.ManagedBy, teamA),
		"refused: "+statusOf(err), err.Error())

	// A user who may create ConfigMaps in team-a.
	const user = "tenant-a-configmaps"
	s.grant(t, teamA, "configmaps", user, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}})
	pu, err := s.env.AddUser(envtest.User{Name: user}, s.cfg)
	require.NoError(t, err)
	privileged, err := client.New(pu.Config(), client.Options{Scheme: s.scheme})
	require.NoError(t, err)

	// A collector of team-a, whose ConfigMap the operator keeps: deleting
	// it after the flood and seeing it put back proves the operator's
	// ConfigMap watch delivered every create before it.
	_, err = s.createYAML(t, s.admin, teamA, collectorYAML("rss-probe", "deployment", ""))
	require.NoError(t, err)
	probe := s.ownedConfigMap(t, "rss-probe", "")
	time.Sleep(2 * time.Second) // let the operator settle after the reconcile
	before := s.operator.rss(t)

	start := time.Now()
	var g errgroup.Group
	g.SetLimit(4)
	for i := range count {
		g.Go(func() error { return privileged.Create(ctx, blob(i)) })
	}
	require.NoError(t, g.Wait(), "the privileged user creates the ConfigMaps")
	created := time.Since(start)
	require.NoError(t, s.admin.Delete(ctx, probe))
	back := s.ownedConfigMap(t, "rss-probe", probe.UID)

	after := before
	for range 10 {
		after = max(after, s.operator.rss(t))
		time.Sleep(pollEvery)
	}
	const limit = count * size / 4
	growth := after - before
	require.Less(t, growth, int64(limit), "the operator's RSS grew by %d MiB for %d MB of ConfigMaps", growth>>20, count*size/1_000_000)
	r.record(fmt.Sprintf("a user who may create ConfigMaps in %s creates %d labelled ConfigMaps of %d MB (in %s)", teamA, count, size/1_000_000, created.Round(time.Second)),
		fmt.Sprintf("operator VmRSS %d MiB before, %d MiB after (+%d MiB for %d MB of data; limit %d MiB)", before>>20, after>>20, growth>>20, count*size/1_000_000, limit>>20),
		fmt.Sprintf("the operator's cache holds the ConfigMaps without their data: RSS +%d MiB < %d MiB, measured once its ConfigMap watch was past the flood (its ConfigMap %s/%s, deleted after the last create, was put back: uid %s, then %s)",
			growth>>20, limit>>20, teamA, back.Name, probe.UID, back.UID))
}

// ownedConfigMap waits for the ConfigMap of collector name in team-a, with
// a UID other than notUID, and returns it.
func (s *suite) ownedConfigMap(t *testing.T, name string, notUID types.UID) *corev1.ConfigMap {
	t.Helper()
	var found *corev1.ConfigMap
	eventually(t, waitFor, "the ConfigMap of collector "+name, func() error {
		var list corev1.ConfigMapList
		if err := s.admin.List(t.Context(), &list, client.InNamespace(teamA), client.MatchingLabels{manifests.LabelManagedBy: manifests.ManagedBy}); err != nil {
			return err
		}
		for i := range list.Items {
			cm := &list.Items[i]
			for _, o := range cm.OwnerReferences {
				if o.Kind == "OpenTelemetryCollector" && o.Name == name && cm.UID != notUID && cm.DeletionTimestamp == nil {
					found = cm
					return nil
				}
			}
		}
		return fmt.Errorf("no ConfigMap of collector %s (other than %s) among %d", name, notUID, len(list.Items))
	})
	return found
}

// statusOf is an API error's code and reason.
func statusOf(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return fmt.Sprintf("HTTP %d %s", st.Status().Code, st.Status().Reason)
	}
	return err.Error()
}

// attackKinds (item 9): the tenant's collector asks the operator for an
// Ingress, a NetworkPolicy or a PodDisruptionBudget, kinds the tenant may
// not create; the admission policy refuses each. A plain collector of the
// same tenant is admitted.
func attackKinds(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	_, err := s.createYAML(t, s.tenant, teamA, collectorYAML("plain", "deployment", ""))
	require.NoError(t, err, "the tenant may create collectors")
	const budget = "podDisruptionBudget: {maxUnavailable: 0}"
	for _, tc := range []struct {
		attempt, doc, needs string
	}{
		{"collector with `ingress: {type: ingress, hostname: team-b.example.com}`",
			collectorYAML("grab-ingress", "deployment", "  ingress: {type: ingress, hostname: team-b.example.com}\n"), "ingresses.networking.k8s.io"},
		{"collector with `networkPolicy: {enabled: true}`",
			collectorYAML("open-network", "deployment", "  networkPolicy: {enabled: true}\n"), "networkpolicies.networking.k8s.io"},
		{"collector with `" + budget + "`",
			collectorYAML("block-drains", "deployment", "  "+budget+"\n"), "poddisruptionbudgets.policy"},
		{"collector with `targetAllocator: {enabled: true, " + budget + "}`",
			collectorYAML("block-drains-allocator", "statefulset", "  targetAllocator: {enabled: true, "+budget+"}\n"), "poddisruptionbudgets.policy"},
		{"TargetAllocator with `" + budget + "`",
			"apiVersion: opentelemetry.io/v1alpha1\nkind: TargetAllocator\nmetadata: {name: block-drains}\nspec: {" + budget + "}\n", "poddisruptionbudgets.policy"},
	} {
		obj, err := s.createYAML(t, s.tenant, teamA, tc.doc)
		require.Error(t, err, "%s admitted", tc.attempt)
		require.True(t, apierrors.IsForbidden(err) || apierrors.IsInvalid(err), "%v", err)
		require.ErrorContains(t, err, tenantUser+" may not create "+tc.needs+" in namespace "+teamA)
		require.ErrorContains(t, err, "ValidatingAdmissionPolicy 'shardwise-tenant-rights'")
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		require.True(t, apierrors.IsNotFound(s.admin.Get(ctx, client.ObjectKeyFromObject(obj), got)), "nothing stored")
		r.record(tc.attempt, "refused at admission: "+statusOf(err), err.Error())
	}
}

// attackMetricsAndDryRun (item 10): the operator's metrics are not served
// to anonymous clients or to a tenant pod's ServiceAccount; a dry-run pod
// create records no event.
func attackMetricsAndDryRun(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	url := "https://127.0.0.1:" + strconv.Itoa(s.metricsPort) + "/metrics"
	hc := insecureClient()

	// The control: a ServiceAccount allowed to get /metrics reads them.
	require.NoError(t, s.admin.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}))
	require.NoError(t, s.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "prometheus"}}))
	require.NoError(t, s.admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: platform, Name: "prometheus"}},
	}))
	reader := s.token(t, platform, "prometheus")
	eventually(t, waitFor, "an authorized ServiceAccount reads the operator's metrics", func() error {
		code, body, err := get(ctx, hc, url, reader)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(string(body), "controller_runtime_") {
			return fmt.Errorf("%d %s", code, truncate(body, 200))
		}
		return nil
	})

	// Anonymous, and a tenant pod's ServiceAccount (the tenant runs pods in
	// team-a, so it holds team-a's tokens).
	require.NoError(t, s.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "default"}}))
	for _, tc := range []struct {
		attempt, token string
		want           int
	}{
		{"GET the operator's /metrics (`--metrics-secure`) without credentials", "", http.StatusUnauthorized},
		{"GET the operator's /metrics with the token of " + teamA + "/default", s.token(t, teamA, "default"), http.StatusForbidden},
	} {
		code, body, err := get(ctx, hc, url, tc.token)
		require.NoError(t, err)
		require.Equal(t, tc.want, code, "%s", truncate(body, 300))
		require.NotContains(t, string(body), "controller_runtime_")
		r.record(tc.attempt, fmt.Sprintf("HTTP %d", code), "the metrics server's TokenReview/SubjectAccessReview filter: "+strings.TrimSpace(truncate(body, 200)))
	}

	// A dry-run create gets the webhook's warnings but leaves no event. The
	// real create that follows is the marker: once its event is there, the
	// dry run's would be too. Each pod names a ReplicaSet of its own as its
	// controller, which the webhook's events regard: isomorphic events of
	// one object merge into a series, so a shared one would hide the
	// marker's.
	s.setUpTeamB(t)
	c, w := s.withWarnings(t, s.tenantCfg)
	dry := ownedBy(appPod(teamA, "dry-run", injectionAnnotations), "dry-run")
	require.NoError(t, c.Create(ctx, dry, client.DryRunAll))
	require.True(t, slices.ContainsFunc(w.all(), func(m string) bool { return strings.Contains(m, "cross-namespace reference refused") }),
		"the webhook answered the dry run: %v", w.all())
	require.True(t, apierrors.IsNotFound(s.admin.Get(ctx, client.ObjectKeyFromObject(dry), &corev1.Pod{})), "a dry run stores nothing")
	marker := ownedBy(appPod(teamA, "dry-run-marker", injectionAnnotations), "dry-run-marker")
	require.NoError(t, s.tenant.Create(ctx, marker))
	markerReason, markerNote := s.warningEvent(t, teamA, "dry-run-marker", "pod dry-run-marker: ")
	var list eventsv1.EventList
	require.NoError(t, s.admin.List(ctx, &list, client.InNamespace(teamA)))
	for _, e := range list.Items {
		require.False(t, e.Regarding.Name == "dry-run" || strings.HasPrefix(e.Note, "pod "+dry.Name+":"), "the dry run recorded an event: %s %s", e.Reason, e.Note)
	}
	r.record("dry-run pod create with team-b's injection annotations (events as a side effect)",
		fmt.Sprintf("no event on pod %s or its ReplicaSet (%d events in %s, the marker pod's among them); the dry run still got %d admission warnings", dry.Name, len(list.Items), teamA, len(w.all())),
		fmt.Sprintf("the pod webhook answered the dry run (warning: %s) and recorded no event for it; the marker's event: %s: %s", w.all()[0], markerReason, markerNote))
}
