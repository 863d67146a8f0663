package attack

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/manifests"
)

// attackCrossTenantDiscovery (item 3): through the platform's allocator,
// which reads monitors of every namespace, the tenant's ServiceMonitor
// selects targets in team-b (namespaceSelector any), relabels its namespace
// to team-b's, and its ScrapeConfig makes the allocator fetch a URL of the
// tenant's choosing (httpSDConfigs). The allocator binary runs with the
// configuration the operator rendered, as its ServiceAccount, and its
// /scrape_configs shows what each became; the operator's NetworkPolicy
// keeps other pods from reading the allocator's targets.
func attackCrossTenantDiscovery(t *testing.T, s *suite, r recorder) {
	ctx := t.Context()
	var cross, relabel, fetch unstructured.Unstructured
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: cross}
spec:
  namespaceSelector: {any: true}
  selector: {matchLabels: {app: legit}}
  endpoints: [{port: metrics}]
`), &cross.Object))
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: pose}
spec:
  selector: {matchLabels: {app: pose}}
  endpoints:
  - port: metrics
    relabelings: [{action: replace, targetLabel: namespace, replacement: team-b}]
`), &relabel.Object))
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: monitoring.coreos.com/v1alpha1
kind: ScrapeConfig
metadata: {name: fetch}
spec:
  httpSDConfigs: [{url: "http://169.254.169.254/latest/meta-data/"}]
`), &fetch.Object))
	for _, o := range []*unstructured.Unstructured{&cross, &relabel, &fetch} {
		o.SetNamespace(teamA)
		require.NoError(t, s.tenant.Create(ctx, o), "the tenant may create %s in its namespace", o.GetKind())
	}

	addr, rendered := s.platformAllocator(t, "platform-tenancy")
	var conf struct {
		PrometheusCR struct {
			Ignore bool     `json:"ignore_namespace_selectors"`
			Label  string   `json:"enforced_namespace_label"`
			SDs    []string `json:"scrape_config_allowed_sds"`
		} `json:"prometheus_cr"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(rendered), &conf))
	require.True(t, conf.PrometheusCR.Ignore, "rendered:\n%s", rendered)
	require.Equal(t, "namespace", conf.PrometheusCR.Label)
	require.NotContains(t, conf.PrometheusCR.SDs, "http")
	require.NotEmpty(t, conf.PrometheusCR.SDs)

	crossJob, poseJob := "serviceMonitor/"+teamA+"/cross/0", "serviceMonitor/"+teamA+"/pose/0"
	var jobs map[string]struct {
		KubernetesSD []struct {
			Namespaces struct {
				Names []string `json:"names"`
			} `json:"namespaces"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			TargetLabel string `json:"target_label"`
			Replacement string `json:"replacement"`
		} `json:"relabel_configs"`
		HTTPSD []json.RawMessage `json:"http_sd_configs"`
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	eventually(t, waitFor, "the allocator serves the tenant's monitors", func() error {
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
		for _, job := range []string{crossJob, poseJob} {
			if _, ok := jobs[job]; !ok {
				return fmt.Errorf("no job %s yet", job)
			}
		}
		return nil
	})

	// namespaceSelector any: discovery stays in the monitor's namespace.
	var namespaces []string
	for _, sd := range jobs[crossJob].KubernetesSD {
		namespaces = append(namespaces, sd.Namespaces.Names...)
	}
	require.Equal(t, []string{teamA}, slices.Compact(namespaces), "the tenant's monitor discovers in its own namespace only")
	r.record(fmt.Sprintf("ServiceMonitor %s/cross with `namespaceSelector: {any: true}` selecting team-b's Service, read by the allocator of %s (every namespace)", teamA, platform),
		fmt.Sprintf("its job discovers in namespaces %v only", namespaces),
		"the allocator, by the operator's rendered `ignore_namespace_selectors: true` (prometheus-operator's generator ignores the monitor's namespaceSelector)")

	// A relabeling to team-b's namespace is overridden by the enforced
	// label, which comes after the monitor's own rules.
	rc := jobs[poseJob].RelabelConfigs
	last := -1
	for i, c := range rc {
		if c.TargetLabel == "namespace" {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0)
	require.Equal(t, teamA, rc[last].Replacement, "the last rule writing namespace sets the monitor's own")
	r.record(fmt.Sprintf("ServiceMonitor %s/pose relabeling `namespace` to team-b", teamA),
		fmt.Sprintf("the last of its job's relabel rules sets namespace=%s", rc[last].Replacement),
		"the allocator, by the operator's rendered `enforced_namespace_label: namespace` (prometheus-operator's generator appends it after the monitor's relabelings)")

	// The ScrapeConfig with http discovery is not served.
	for job, sc := range jobs {
		require.NotContains(t, job, teamA+"/fetch", "job %s is served", job)
		require.Empty(t, sc.HTTPSD, "job %s has http discovery", job)
	}
	note, ok := s.findWarning(t, teamA, "fetch", waitFor)
	require.True(t, ok, "a Warning event on ScrapeConfig %s/fetch", teamA)
	require.Contains(t, note, "http")
	r.record(fmt.Sprintf("ScrapeConfig %s/fetch with `httpSDConfigs` at http://169.254.169.254/latest/meta-data/", teamA),
		"no job of it is served, so no http discovery of it runs",
		fmt.Sprintf("the allocator, by the operator's rendered `scrape_config_allowed_sds: %v` (shardwise's own filter; prometheus-operator has none): Warning event %s", conf.PrometheusCR.SDs, note))

	// Reading the allocator's targets (their __meta_* labels) from another
	// pod: the operator's NetworkPolicy admits only the collectors and the
	// operator's namespace.
	var np networkingv1.NetworkPolicy
	name := manifests.TargetAllocatorName("platform-tenancy") + "-networkpolicy"
	require.NoError(t, s.admin.Get(ctx, client.ObjectKey{Namespace: platform, Name: name}, &np), "the allocator's NetworkPolicy")
	require.NotEmpty(t, np.Spec.Ingress)
	var from []string
	for _, rule := range np.Spec.Ingress {
		for _, peer := range rule.From {
			switch {
			case peer.PodSelector != nil:
				from = append(from, "pods "+labelsOf(peer.PodSelector.MatchLabels))
			case peer.NamespaceSelector != nil:
				from = append(from, "namespace "+labelsOf(peer.NamespaceSelector.MatchLabels))
			}
		}
		require.NotEmpty(t, rule.From, "no rule admits every source")
	}
	r.record(fmt.Sprintf("a pod in %s reads the platform allocator's targets (every target's `__meta_*` labels) on port 8080", teamA),
		"not admitted (with a CNI that enforces NetworkPolicies; envtest has none, so the policy itself is what the test checks)",
		fmt.Sprintf("the operator's NetworkPolicy %s/%s, on by default for an allocator of other namespaces: ingress only from %s", platform, name, strings.Join(from, "; ")))
}

// labelsOf renders a label set as k=v pairs, sorted.
func labelsOf(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
