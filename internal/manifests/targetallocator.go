package manifests

import (
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
)

// AllocatorInput is what an allocator's objects depend on.
type AllocatorInput struct {
	// TargetAllocator is the resource.
	TargetAllocator *v1alpha1.TargetAllocator
	// CollectorSelector selects the collector pods that receive targets, in
	// the allocator's namespace.
	CollectorSelector map[string]string
	// ScrapeConfigs are scrape configs besides the resource's own: those of a
	// collector that names this allocator with LabelTargetAllocator.
	ScrapeConfigs []v1beta1.AnyConfig
}

// TargetAllocator is the desired state of one TargetAllocator.
type TargetAllocator struct {
	// Objects are the namespaced objects, owned by the resource.
	Objects []client.Object
	// ClusterObjects are the cluster-scoped objects (RBAC for discovery of
	// prometheus-operator resources across namespaces). A namespaced resource
	// cannot own them, so they are cleaned up by a finalizer.
	ClusterObjects []client.Object
	// ConfigHash is the hash of the rendered allocator config.
	ConfigHash string
	// Selector selects the allocator pods.
	Selector map[string]string
}

// BuildTargetAllocator returns the desired objects of an allocator.
func BuildTargetAllocator(in AllocatorInput, s Settings) (TargetAllocator, error) {
	ta := in.TargetAllocator
	ns := ta.Namespace
	name := TargetAllocatorName(ta.Name)
	labels := Labels(ns, ta.Name, ComponentTargetAllocator, name)
	selector := SelectorLabels(ns, ta.Name, ComponentTargetAllocator)

	rendered, err := RenderAllocatorConfig(ta, in.CollectorSelector, in.ScrapeConfigs)
	if err != nil {
		return TargetAllocator{}, err
	}
	hash := Hash(rendered)
	out := TargetAllocator{ConfigHash: hash, Selector: selector}
	out.Objects = append(out.Objects, &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(ns, name, labels),
		Data:       map[string]string{TargetAllocatorConfigKey: rendered},
	})

	sa := ta.Spec.ServiceAccount
	if sa == "" {
		sa = name
		out.Objects = append(out.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(ns, name, labels),
		})
		out.Objects = append(out.Objects, allocatorRBAC(ta, name, labels)...)
		out.ClusterObjects = allocatorClusterRBAC(ta, name)
	}

	out.Objects = append(out.Objects, service(ns, name, labels, selector, []corev1.ServicePort{{
		Name: "targetallocation", Port: TargetAllocatorSvcPort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromString("http"),
	}}))
	out.Objects = append(out.Objects, allocatorDeployment(ta, s, name, labels, selector, sa, hash))
	out.Objects = append(out.Objects, pdb(ns, name, labels, selector, ta.Spec.PodDisruptionBudget))
	return out, nil
}

// RenderAllocatorConfig renders targetallocator.yaml with the keys of the
// upstream operator's allocator config.
func RenderAllocatorConfig(ta *v1alpha1.TargetAllocator, collectorSelector map[string]string, extra []v1beta1.AnyConfig) (string, error) {
	spec := ta.Spec
	scrapeConfigs := make([]any, 0, len(spec.ScrapeConfigs)+len(extra))
	for _, sc := range append(append([]v1beta1.AnyConfig{}, spec.ScrapeConfigs...), extra...) {
		scrapeConfigs = append(scrapeConfigs, sc.Object)
	}
	strategy := string(spec.AllocationStrategy)
	if strategy == "" {
		strategy = string(v1beta1.TargetAllocatorAllocationStrategyConsistentHashing)
	}
	// Upstream reads an empty filter strategy as "none"; say so explicitly.
	filter := string(spec.FilterStrategy)
	if filter == "" {
		filter = string(v1beta1.TargetAllocatorFilterStrategyNone)
	}
	grace := 30 * time.Second
	if spec.CollectorNotReadyGracePeriod != nil {
		grace = spec.CollectorNotReadyGracePeriod.Duration
	}
	cfg := map[string]any{
		"listen_addr":                      ":8080",
		"collector_namespace":              ta.Namespace,
		"collector_selector":               metav1.LabelSelector{MatchLabels: collectorSelector},
		"collector_not_ready_grace_period": grace.String(),
		"allocation_strategy":              strategy,
		"filter_strategy":                  filter,
		"config":                           map[string]any{"scrape_configs": scrapeConfigs},
	}
	if spec.AllowInsecureAuthSecrets {
		cfg["allow_insecure_auth_secrets"] = true
	}
	if p := spec.PrometheusCR; p.Enabled {
		pcr := map[string]any{"enabled": true}
		set := func(key string, v any, ok bool) {
			if ok {
				pcr[key] = v
			}
		}
		set("allow_namespaces", p.AllowNamespaces, len(p.AllowNamespaces) > 0)
		set("deny_namespaces", p.DenyNamespaces, len(p.DenyNamespaces) > 0)
		set("secret_namespaces", p.SecretNamespaces, len(p.SecretNamespaces) > 0)
		set("scrape_protocols", p.ScrapeProtocols, len(p.ScrapeProtocols) > 0)
		set("scrape_classes", p.ScrapeClasses, len(p.ScrapeClasses) > 0)
		if p.ScrapeInterval != nil {
			pcr["scrape_interval"] = p.ScrapeInterval.Duration.String()
		}
		if p.EvaluationInterval != nil {
			pcr["evaluation_interval"] = p.EvaluationInterval.Duration.String()
		}
		for key, sel := range map[string]*metav1.LabelSelector{
			"service_monitor_selector":           p.ServiceMonitorSelector,
			"service_monitor_namespace_selector": p.ServiceMonitorNamespaceSelector,
			"pod_monitor_selector":               p.PodMonitorSelector,
			"pod_monitor_namespace_selector":     p.PodMonitorNamespaceSelector,
			"probe_selector":                     p.ProbeSelector,
			"probe_namespace_selector":           p.ProbeNamespaceSelector,
			"scrape_config_selector":             p.ScrapeConfigSelector,
			"scrape_config_namespace_selector":   p.ScrapeConfigNamespaceSelector,
		} {
			set(key, sel, sel != nil)
		}
		cfg["prometheus_cr"] = pcr
	}
	b, err := marshalYAML(cfg)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func allocatorDeployment(ta *v1alpha1.TargetAllocator, s Settings, name string, labels, selector map[string]string, sa, hash string) *appsv1.Deployment {
	spec := ta.Spec
	image := spec.Image
	if image == "" {
		image = s.TargetAllocatorImage
	}
	annotations := maps.Clone(spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationConfigHash] = hash
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(TargetAllocatorPort),
		}}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(ta.Namespace, name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName: sa,
					Containers: []corev1.Container{{
						Name:            TargetAllocatorContainer,
						Image:           image,
						ImagePullPolicy: spec.ImagePullPolicy,
						Args:            []string{"--config-file=" + targetAllocatorConfigDir + "/" + TargetAllocatorConfigKey},
						Env:             spec.Env,
						Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: TargetAllocatorPort, Protocol: corev1.ProtocolTCP}},
						Resources:       spec.Resources,
						VolumeMounts:    []corev1.VolumeMount{{Name: targetAllocatorVolume, MountPath: targetAllocatorConfigDir}},
						LivenessProbe:   probe("/livez"),
						ReadinessProbe:  probe("/readyz"),
					}},
					Volumes: []corev1.Volume{{
						Name: targetAllocatorVolume,
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: name},
							Items:                []corev1.KeyToPath{{Key: TargetAllocatorConfigKey, Path: TargetAllocatorConfigKey}},
						}},
					}},
					NodeSelector: spec.NodeSelector,
					Tolerations:  spec.Tolerations,
					Affinity:     spec.Affinity,
				},
			},
		},
	}
}

var readVerbs = []string{"get", "list", "watch"}

// allocatorRBAC grants the allocator what it reads in its own namespace: the
// collector pods and, with prometheus-operator discovery and no other secret
// namespaces, the Secrets and ConfigMaps monitors reference.
func allocatorRBAC(ta *v1alpha1.TargetAllocator, name string, labels map[string]string) []client.Object {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: readVerbs}}
	if p := ta.Spec.PrometheusCR; p.Enabled && len(p.SecretNamespaces) == 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: readVerbs})
	}
	return []client.Object{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: meta(ta.Namespace, name, labels),
			Rules:      rules,
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: meta(ta.Namespace, name, labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ta.Namespace}},
		},
	}
}

// allocatorClusterRBAC grants what prometheus-operator discovery needs across
// namespaces: the monitoring resources and namespaces (selected by label), and
// the objects service discovery watches. It is empty without prometheusCR.
func allocatorClusterRBAC(ta *v1alpha1.TargetAllocator, saName string) []client.Object {
	p := ta.Spec.PrometheusCR
	if !p.Enabled {
		return nil
	}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "podmonitors", "probes", "scrapeconfigs"}, Verbs: readVerbs},
		{APIGroups: []string{""}, Resources: []string{"namespaces", "services", "endpoints", "pods"}, Verbs: readVerbs},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: readVerbs},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: readVerbs},
	}
	if len(p.SecretNamespaces) > 0 {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: readVerbs})
	}
	name := ClusterRoleName(ta.Namespace, ta.Name)
	labels := Labels(ta.Namespace, ta.Name, ComponentTargetAllocator, TargetAllocatorName(ta.Name))
	return []client.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Rules:      rules,
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: ta.Namespace}},
		},
	}
}
