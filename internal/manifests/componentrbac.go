package manifests

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// ComponentRules are the rights one component of a collector's pipelines
// needs from the API server, as the upstream operator grants them with
// --create-rbac-permissions (internal/components/*/: GetRbacRules). Rules
// are cluster-wide (nodes, every namespace's pods); Leases are in the
// collector's namespace (k8sleaderelector takes its lease there).
type ComponentRules struct {
	// Component is the component's id in the configuration, e.g.
	// "processors/k8sattributes/a".
	Component string
	// Cluster are the cluster-wide rules, Namespaced those in the
	// collector's namespace.
	Cluster, Namespaced []rbacv1.PolicyRule
}

// componentRulers are the components that need rights, by kind and type.
var componentRulers = map[string]map[string]func(cfg map[string]any) ComponentRules{
	"receivers": {
		"k8s_cluster": k8sClusterRules,
		"k8s_events": func(map[string]any) ComponentRules {
			return ComponentRules{Cluster: []rbacv1.PolicyRule{read("", "events")}}
		},
		"k8sobjects":   k8sObjectsRules,
		"kubeletstats": kubeletStatsRules,
	},
	"processors": {
		"k8sattributes":     k8sAttributesRules,
		"resourcedetection": resourceDetectionRules,
	},
	"extensions": {
		"k8s_observer": k8sObserverRules,
		"k8sleaderelector": func(map[string]any) ComponentRules {
			return ComponentRules{Namespaced: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
		},
	},
}

// CollectorComponentRules are the rights the components a collector's
// service uses (in a pipeline, or listed in service.extensions) need, in
// the order of their ids; components that need none are absent.
func CollectorComponentRules(cfg v1beta1.Config) []ComponentRules {
	used := map[string]map[string]bool{"receivers": {}, "processors": {}, "extensions": {}}
	for _, p := range cfg.Service.Pipelines {
		if p == nil {
			continue
		}
		for _, id := range p.Receivers {
			used["receivers"][id] = true
		}
		for _, id := range p.Processors {
			used["processors"][id] = true
		}
	}
	for _, id := range cfg.Service.Extensions {
		used["extensions"][id] = true
	}
	declared := map[string]map[string]any{"receivers": cfg.Receivers.Object}
	if cfg.Processors != nil {
		declared["processors"] = cfg.Processors.Object
	}
	if cfg.Extensions != nil {
		declared["extensions"] = cfg.Extensions.Object
	}
	var out []ComponentRules
	for _, kind := range []string{"receivers", "processors", "extensions"} {
		for _, id := range slices.Sorted(maps.Keys(used[kind])) {
			typ, _, _ := strings.Cut(id, "/")
			ruler, ok := componentRulers[kind][typ]
			if !ok {
				continue
			}
			body, _ := declared[kind][id].(map[string]any)
			r := ruler(body)
			if len(r.Cluster)+len(r.Namespaced) == 0 {
				continue
			}
			r.Component = kind + "/" + id
			out = append(out, r)
		}
	}
	return out
}

// decode reads a component's configuration into v; what does not fit is
// left zero (the collector itself refuses a bad configuration).
func decode(cfg map[string]any, v any) {
	if b, err := json.Marshal(cfg); err == nil {
		_ = json.Unmarshal(b, v)
	}
}

func read(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch"}}
}

// k8sAttributesRules: upstream's processors/k8sattribute.go.
func k8sAttributesRules(cfg map[string]any) ComponentRules {
	var c struct {
		Extract struct {
			Metadata []string `json:"metadata"`
		} `json:"extract"`
	}
	decode(cfg, &c)
	r := ComponentRules{Cluster: []rbacv1.PolicyRule{read("", "pods", "namespaces")}}
	replicaSets := len(c.Extract.Metadata) == 0
	nodes := false
	for _, m := range c.Extract.Metadata {
		switch {
		case m == "k8s.deployment.uid" || m == "k8s.deployment.name" || m == "service.name":
			replicaSets = true
		case strings.Contains(m, "k8s.node"):
			nodes = true
		}
	}
	if replicaSets {
		r.Cluster = append(r.Cluster, read("apps", "replicasets"))
	}
	if nodes {
		r.Cluster = append(r.Cluster, read("", "nodes"))
	}
	return r
}

// resourceDetectionRules: upstream's processors/resourcedetection.go.
func resourceDetectionRules(cfg map[string]any) ComponentRules {
	var c struct {
		Detectors []string `json:"detectors"`
	}
	decode(cfg, &c)
	var r ComponentRules
	for _, d := range c.Detectors {
		switch d {
		case "k8snode":
			r.Cluster = append(r.Cluster, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}})
		case "openshift":
			r.Cluster = append(r.Cluster, read("config.openshift.io", "infrastructures", "infrastructures/status"))
		}
	}
	return r
}

// k8sClusterRules: upstream's receivers/k8scluster.go.
func k8sClusterRules(cfg map[string]any) ComponentRules {
	var c struct {
		Distribution string `json:"distribution"`
	}
	decode(cfg, &c)
	r := ComponentRules{Cluster: []rbacv1.PolicyRule{
		read("", "events", "namespaces", "namespaces/status", "nodes", "nodes/spec", "persistentvolumeclaims", "persistentvolumes",
			"pods", "pods/status", "replicationcontrollers", "replicationcontrollers/status", "resourcequotas", "services"),
		read("apps", "daemonsets", "deployments", "replicasets", "statefulsets"),
		read("extensions", "daemonsets", "deployments", "replicasets"),
		read("batch", "jobs", "cronjobs"),
		read("autoscaling", "horizontalpodautoscalers"),
	}}
	if c.Distribution == "openshift" {
		r.Cluster = append(r.Cluster, read("quota.openshift.io", "clusterresourcequotas"))
	}
	return r
}

// k8sObjectsRules: upstream's receivers/k8sobjects.go.
func k8sObjectsRules(cfg map[string]any) ComponentRules {
	var c struct {
		Objects []struct {
			Name  string `json:"name"`
			Mode  string `json:"mode"`
			Group string `json:"group"`
		} `json:"objects"`
	}
	decode(cfg, &c)
	var r ComponentRules
	for _, o := range c.Objects {
		if o.Name == "" {
			continue
		}
		verbs := []string{"list"}
		switch {
		case o.Mode == "pull" && o.Name != "events" && o.Name != "events.k8s.io":
			verbs = append(verbs, "get")
		case o.Mode == "watch":
			verbs = append(verbs, "watch")
		}
		r.Cluster = append(r.Cluster, rbacv1.PolicyRule{APIGroups: []string{o.Group}, Resources: []string{o.Name}, Verbs: verbs})
	}
	return r
}

// kubeletStatsRules: upstream's receivers/kubeletstats.go.
func kubeletStatsRules(cfg map[string]any) ComponentRules {
	var c struct {
		ExtraMetadataLabels []string `json:"extra_metadata_labels"`
		Metrics             map[string]struct {
			Enabled bool `json:"enabled"`
		} `json:"metrics"`
	}
	decode(cfg, &c)
	r := ComponentRules{Cluster: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/stats"}, Verbs: []string{"get"}}}}
	proxy := len(c.ExtraMetadataLabels) > 0
	for name, m := range c.Metrics {
		if m.Enabled && (strings.HasSuffix(name, "_limit_utilization") || strings.HasSuffix(name, "_request_utilization")) {
			proxy = true
		}
	}
	if proxy {
		r.Cluster = append(r.Cluster, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}})
	}
	return r
}

// k8sObserverRules: upstream's extensions/k8sobserver.go.
func k8sObserverRules(cfg map[string]any) ComponentRules {
	var c struct {
		Pods     bool `json:"observe_pods"`
		Services bool `json:"observe_services"`
		Nodes    bool `json:"observe_nodes"`
	}
	decode(cfg, &c)
	var r ComponentRules
	for resource, on := range map[string]bool{"pods": c.Pods, "services": c.Services, "nodes": c.Nodes} {
		if on {
			r.Cluster = append(r.Cluster, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: []string{"list", "watch"}})
		}
	}
	slices.SortFunc(r.Cluster, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.Resources[0], b.Resources[0]) })
	return r
}

// CollectorRBACName is the name of the Role, ClusterRole and their
// bindings that grant a collector's components their rights.
func CollectorRBACName(namespace, instance string) string {
	return ClusterScopedName(namespace, instance, "-collector")
}

// componentRBAC is the RBAC of a collector's components for its
// ServiceAccount sa: a Role and RoleBinding in its namespace (owned), a
// ClusterRole and ClusterRoleBinding (cluster-scoped, annotated with their
// owner). Nil when no component needs any.
func componentRBAC(ns, instance, sa string, labels map[string]string, rules []ComponentRules) (owned, cluster []client.Object) {
	var namespaced, clusterRules []rbacv1.PolicyRule
	for _, r := range rules {
		namespaced = append(namespaced, r.Namespaced...)
		clusterRules = append(clusterRules, r.Cluster...)
	}
	name := CollectorRBACName(ns, instance)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	if len(namespaced) > 0 {
		owned = append(owned,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: Meta(ns, name, labels), Rules: namespaced},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: Meta(ns, name, labels), Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	if len(clusterRules) > 0 {
		meta := func() metav1.ObjectMeta {
			return metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels), Annotations: map[string]string{AnnotationOwner: ns + "/" + instance}}
		}
		cluster = append(cluster,
			&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: meta(), Rules: clusterRules},
			&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: meta(), Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
	return owned, cluster
}
