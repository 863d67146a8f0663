package manifests

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
	"github.com/shardwise/shardwise/internal/manifests/container"
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
	// OptedIn are the namespaces that let the allocators of the allocator's
	// namespace read them: those labelled ReaderLabel(namespace)=true.
	OptedIn []string
}

// LabelReaderPrefix is the prefix of the label by which a namespace lets
// the allocators of another namespace, the label's name, read it
// (ReaderLabel). Only whoever may update a namespace, a cluster
// administrator, can set it; a tenant's spec cannot.
const LabelReaderPrefix = "readers.shardwise.io/"

// ReaderLabel is the label, with the value "true", that lets the
// allocators of namespace ns be granted reads in the namespace carrying it,
// as if ns were in --target-allocator-cluster-wide-namespaces for that
// namespace alone.
func ReaderLabel(ns string) string { return LabelReaderPrefix + ns }

// TargetAllocator is the desired state of one TargetAllocator.
type TargetAllocator struct {
	// Objects are the namespaced objects, owned by the resource.
	Objects []client.Object
	// ClusterObjects are the objects the resource cannot own: cluster-scoped
	// RBAC and RBAC in other namespaces (for discovery of prometheus-operator
	// resources). They carry AnnotationOwner and are cleaned up by a finalizer.
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
	labels := withResourceLabels(ta.Labels, s.LabelsFilter, Labels(ns, ta.Name, ComponentTargetAllocator, name))
	labels[LabelVersion] = VersionLabel(cmp.Or(ta.Spec.Image, s.TargetAllocatorImage))
	// An allocator's pods are selected by their name label too, as
	// upstream's TASelectorLabels (the resource's own name label when set).
	selector := SelectorLabels(ns, ta.Name, ComponentTargetAllocator)
	selector[LabelName] = labels[LabelName]

	if err := validateMTLS(ta.Spec.Mtls); err != nil {
		return TargetAllocator{}, err
	}
	rendered, err := RenderAllocatorConfig(ta, in.CollectorSelector, in.ScrapeConfigs)
	if err != nil {
		return TargetAllocator{}, err
	}
	hash := Hash(rendered)
	out := TargetAllocator{ConfigHash: hash, Selector: selector}
	out.Objects = append(out.Objects, &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: Meta(ns, name, labels),
		Data:       map[string]string{TargetAllocatorConfigKey: rendered},
	})

	sa := ta.Spec.ServiceAccount
	if sa == "" {
		sa = name
		out.Objects = append(out.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: Meta(ns, name, labels),
		})
		owned, foreign, err := allocatorRBAC(ta, s, in.OptedIn, name, labels)
		if err != nil {
			return TargetAllocator{}, err
		}
		out.Objects = append(out.Objects, owned...)
		out.ClusterObjects = foreign
	}

	ports := []corev1.ServicePort{{
		Name: "targetallocation", Port: TargetAllocatorSvcPort, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromString("http"),
	}}
	if ta.Spec.Mtls.IsEnabled() {
		ports = append(ports, corev1.ServicePort{
			Name: "targetallocation-https", Port: TargetAllocatorHTTPSSvcPort, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromString("https"),
		})
	}
	if ta.Spec.Mtls.CertManager() {
		out.Objects = append(out.Objects, certManagerObjects(ns, ta.Name)...)
	}
	svc := Service(ns, name, labels, selector, ports)
	svc.Spec.IPFamilies = slices.Clone(ta.Spec.IPFamilies)
	svc.Spec.IPFamilyPolicy = ta.Spec.IPFamilyPolicy
	svc.Spec.TrafficDistribution = ta.Spec.TrafficDistribution
	out.Objects = append(out.Objects, svc)
	deploy := allocatorDeployment(ta, s, name, labels, selector, sa, hash)
	out.Objects = append(out.Objects, deploy)
	if np := allocatorNetworkPolicy(ta, s, labels, selector, in.CollectorSelector, deploy.Spec.Template.Spec.Containers[0].Ports); np != nil {
		out.Objects = append(out.Objects, np)
	}
	out.Objects = append(out.Objects, pdb(ns, name, labels, selector, ta.Spec.PodDisruptionBudget))
	if m := ta.Spec.Observability.Metrics; m.EnableMetrics {
		out.Objects = append(out.Objects, allocatorServiceMonitor(ta, name, selector, m.ExtraLabels))
	}
	return out, nil
}

// allocatorServiceMonitor is the ServiceMonitor of an allocator's own
// metrics, as upstream's (targetallocator/servicemonitor.go): named as the
// allocator's objects, scraping the Service's targetallocation port. The
// extra labels come first and the operator's own win, as on a collector's.
func allocatorServiceMonitor(ta *v1alpha1.TargetAllocator, name string, selector, extraLabels map[string]string) client.Object {
	labels := maps.Clone(extraLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, Labels(ta.Namespace, ta.Name, ComponentTargetAllocator, name))
	return monitorObject(ta.Namespace, "ServiceMonitor", name, labels, map[string]any{
		"endpoints":         []any{map[string]any{"port": "targetallocation"}},
		"namespaceSelector": map[string]any{"matchNames": []any{ta.Namespace}},
		"selector":          map[string]any{"matchLabels": stringMap(selector)},
	})
}

// RenderAllocatorConfig renders targetallocator.yaml with the keys of the
// upstream operator's allocator config: an allocatorconfig.File, the type
// the allocator parses.
func RenderAllocatorConfig(ta *v1alpha1.TargetAllocator, collectorSelector map[string]string, extra []v1beta1.AnyConfig) (string, error) {
	spec := ta.Spec
	scrapeConfigs := make([]map[string]any, 0, len(spec.ScrapeConfigs)+len(extra))
	for _, sc := range append(slices.Clone(spec.ScrapeConfigs), extra...) {
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
	cr, err := renderPrometheusCR(spec.PrometheusCR, ta.Namespace)
	if err != nil {
		return "", err
	}
	cfg := allocatorconfig.File{
		Allocator: allocatorconfig.Allocator{
			ListenAddr:               ":8080",
			AllocationStrategy:       strategy,
			AllowInsecureAuthSecrets: spec.AllowInsecureAuthSecrets,
		},
		Discovery: allocatorconfig.Config{
			PromConfig:     allocatorconfig.ScrapeConfigs(scrapeConfigs),
			FilterStrategy: filter,
			PrometheusCR:   cr,
			Collector: allocatorconfig.CollectorConfig{
				CollectorNamespace:           ta.Namespace,
				CollectorSelector:            &metav1.LabelSelector{MatchLabels: collectorSelector},
				CollectorNotReadyGracePeriod: grace,
			},
		},
	}
	if err := renderAllocatorAnnotations(&cfg.Allocator, ta.Annotations); err != nil {
		return "", err
	}
	if spec.Mtls.IsEnabled() {
		ca, cert, key := tlsFiles()
		cfg.HTTPS = allocatorconfig.HTTPS{
			Enabled:         true,
			ListenAddr:      fmt.Sprintf(":%d", TargetAllocatorHTTPSPort),
			CAFilePath:      ca,
			TLSCertFilePath: cert,
			TLSKeyFilePath:  key,
		}
	}
	b, err := cfg.Marshal()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DefaultEnforcedNamespaceLabel is prometheusCR.enforcedNamespaceLabel of an
// allocator that discovers monitors outside its own namespace.
const DefaultEnforcedNamespaceLabel = "namespace"

// DefaultScrapeConfigAllowedSDs is prometheusCR.scrapeConfigAllowedSDs of an
// allocator that discovers monitors outside its own namespace: the kinds
// whose discovery the allocator runs without fetching a URL or reading a
// file its author names (http, file, and the service registries and cloud
// APIs whose server a ScrapeConfig names are left out).
var DefaultScrapeConfigAllowedSDs = []v1beta1.ScrapeConfigSD{"static", "kubernetes", "dns"}

// renderPrometheusCR is the prometheus_cr block of an allocator in
// namespace ns, zero when it is disabled.
func renderPrometheusCR(p v1beta1.TargetAllocatorPrometheusCR, ns string) (allocatorconfig.PrometheusCRConfig, error) {
	if !p.Enabled {
		return allocatorconfig.PrometheusCRConfig{}, nil
	}
	others := DiscoversOtherNamespaces(p, ns)
	// A tenant's monitor may neither select targets in another namespace
	// nor relabel its namespace away, unless the spec says otherwise.
	nsLabel := ""
	if others {
		nsLabel = DefaultEnforcedNamespaceLabel
	}
	limit := func(v *int64) *uint64 {
		if v == nil || *v < 0 {
			return nil
		}
		return ptr.To(uint64(*v))
	}
	allowed := p.ScrapeConfigAllowedSDs
	if allowed == nil && others {
		allowed = DefaultScrapeConfigAllowedSDs
	}
	var sds []string
	for _, sd := range allowed {
		sds = append(sds, string(sd))
	}
	var protocols []monitoringv1.ScrapeProtocol
	for _, sp := range p.ScrapeProtocols {
		protocols = append(protocols, monitoringv1.ScrapeProtocol(sp))
	}
	duration := func(d *metav1.Duration) model.Duration {
		if d == nil {
			return 0
		}
		return model.Duration(d.Duration)
	}
	classes, err := allocatorconfig.DecodeScrapeClasses(objects(p.ScrapeClasses))
	if err != nil {
		return allocatorconfig.PrometheusCRConfig{}, fmt.Errorf("prometheusCR.scrapeClasses: %w", err)
	}
	return allocatorconfig.PrometheusCRConfig{
		Enabled:                         true,
		AllowNamespaces:                 p.AllowNamespaces,
		DenyFSAccessThroughSMs:          ptr.Deref(p.DenyFSAccessThroughSMs, others),
		DenyNamespaces:                  p.DenyNamespaces,
		IgnoreNamespaceSelectors:        ptr.Deref(p.IgnoreNamespaceSelectors, others),
		EnforcedNamespaceLabel:          ptr.Deref(p.EnforcedNamespaceLabel, nsLabel),
		EnforcedSampleLimit:             limit(p.EnforcedSampleLimit),
		EnforcedTargetLimit:             limit(p.EnforcedTargetLimit),
		EnforcedLabelLimit:              limit(p.EnforcedLabelLimit),
		EnforcedLabelNameLengthLimit:    limit(p.EnforcedLabelNameLengthLimit),
		EnforcedLabelValueLengthLimit:   limit(p.EnforcedLabelValueLengthLimit),
		EnforcedBodySizeLimit:           ptr.Deref(p.EnforcedBodySizeLimit, ""),
		ScrapeConfigAllowedSDs:          sds,
		SecretNamespaces:                p.SecretNamespaces,
		ScrapeProtocols:                 protocols,
		ScrapeClasses:                   classes,
		ScrapeInterval:                  duration(p.ScrapeInterval),
		EvaluationInterval:              duration(p.EvaluationInterval),
		ServiceMonitorSelector:          p.ServiceMonitorSelector,
		ServiceMonitorNamespaceSelector: p.ServiceMonitorNamespaceSelector,
		PodMonitorSelector:              p.PodMonitorSelector,
		PodMonitorNamespaceSelector:     p.PodMonitorNamespaceSelector,
		ProbeSelector:                   p.ProbeSelector,
		ProbeNamespaceSelector:          p.ProbeNamespaceSelector,
		ScrapeConfigSelector:            p.ScrapeConfigSelector,
		ScrapeConfigNamespaceSelector:   p.ScrapeConfigNamespaceSelector,
	}, nil
}

// objects are the configs' objects, an empty object for an empty config (as
// AnyConfig marshals it); nil when there are none.
func objects(cs []v1beta1.AnyConfig) []map[string]any {
	var out []map[string]any
	for _, c := range cs {
		o := c.Object
		if o == nil {
			o = map[string]any{}
		}
		out = append(out, o)
	}
	return out
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
	ports := []corev1.ContainerPort{{Name: "http", ContainerPort: TargetAllocatorPort, Protocol: corev1.ProtocolTCP}}
	mounts := []corev1.VolumeMount{{Name: targetAllocatorVolume, MountPath: targetAllocatorConfigDir}}
	volumes := []corev1.Volume{{
		Name: targetAllocatorVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: TargetAllocatorConfigKey, Path: TargetAllocatorConfigKey}},
		}},
	}}
	if spec.Mtls.IsEnabled() {
		ports = append(ports, corev1.ContainerPort{Name: "https", ContainerPort: TargetAllocatorHTTPSPort, Protocol: corev1.ProtocolTCP})
		mounts = append(mounts, tlsMount(allocatorTLSVolume))
		volumes = append(volumes, tlsVolume(allocatorTLSVolume, spec.Mtls, ServerCertificateName(ta.Name), serverCert))
	}
	podSecurity, security := container.Contexts(spec.PodSecurityContext, spec.SecurityContext)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: Meta(ta.Namespace, name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName: sa,
					SecurityContext:    podSecurity,
					Containers: []corev1.Container{{
						Name:            TargetAllocatorContainer,
						SecurityContext: security,
						Image:           image,
						ImagePullPolicy: spec.ImagePullPolicy,
						Args:            []string{"--config-file=" + targetAllocatorConfigDir + "/" + TargetAllocatorConfigKey},
						Env:             spec.Env,
						Ports:           ports,
						Resources:       spec.Resources,
						VolumeMounts:    mounts,
						LivenessProbe:   probe("/livez"),
						ReadinessProbe:  probe("/readyz"),
					}},
					Volumes:      volumes,
					NodeSelector: spec.NodeSelector,
					Tolerations:  spec.Tolerations,
					Affinity:     spec.Affinity,
					HostAliases:  spec.HostAliases,
					DNSPolicy:    DNSPolicy(spec.DNSPolicy, false, spec.PodDNSConfig),
					DNSConfig:    spec.PodDNSConfig,
				},
			},
		},
	}
}

var readVerbs = []string{"get", "list", "watch"}

// SecretReaderClusterRole is the ClusterRole (config/rbac, installed with the
// operator) that lets a subject get Secrets and ConfigMaps. The operator binds
// it with a RoleBinding in each namespace the allocator reads Secrets from, so
// it never needs to read Secrets itself: RBAC lets it bind a role it may
// `bind` without holding the role's permissions.
const SecretReaderClusterRole = "shardwise-targetallocator-secret-reader"

// AnnotationOwner on the objects a TargetAllocator cannot own (cluster-scoped
// RBAC, Roles in other namespaces) names it as <namespace>/<name>, so a watch
// can map a change back to it.
const AnnotationOwner = "opentelemetry.io/shardwise-owner"

// ErrGrantNotAllowed is an allocator that needs permissions outside its own
// namespace while the operator was not started with --allow-cluster-wide-grants.
var ErrGrantNotAllowed = errors.New("needs permissions outside its own namespace; the operator grants them only to allocators of the namespaces in --target-allocator-cluster-wide-namespaces (or every one with --allow-cluster-wide-grants), or in a namespace labelled " + LabelReaderPrefix + "<allocator namespace>=true")

// Rules of the allocator's discovery.
var (
	// monitorRules read the prometheus-operator resources and what the
	// service discovery they generate watches.
	monitorRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"monitoring.coreos.com"}, Resources: []string{"servicemonitors", "podmonitors", "probes", "scrapeconfigs"}, Verbs: readVerbs},
		{APIGroups: []string{""}, Resources: []string{"services", "endpoints", "pods"}, Verbs: readVerbs},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: readVerbs},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: readVerbs},
	}
	// eventRule lets the allocator report a rejected monitor as an event.
	eventRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}}
	// podRule reads the collector pods.
	podRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: readVerbs}
	// namespaceRule reads namespaces (names and labels), which the
	// monitors' namespace selectors match against.
	namespaceRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: readVerbs}
)

// grants is the RBAC an allocator needs, by namespace.
type grants struct {
	// rules are the Role rules per namespace.
	rules map[string][]rbacv1.PolicyRule
	// secrets are the namespaces where the allocator gets Secrets and ConfigMaps.
	secrets []string
	// cluster are the ClusterRole rules.
	cluster []rbacv1.PolicyRule
	// clusterWide says that cluster holds more than namespace reads.
	clusterWide bool
}

// allocatorGrants computes what the allocator of ta reads, and where:
//   - its own namespace: the collector pods, and events it writes;
//   - with prometheusCR: namespaces (cluster-scoped, for the namespace
//     selectors); the monitors and the objects their service discovery
//     watches in each allowNamespaces entry, or in every namespace without
//     allowNamespaces; Secrets and ConfigMaps (get only) in each
//     secretNamespaces entry, or, without it, in its own namespace and each
//     allowNamespaces entry (where the monitors that reference them live).
func allocatorGrants(ta *v1alpha1.TargetAllocator) grants {
	own := ta.Namespace
	g := grants{rules: map[string][]rbacv1.PolicyRule{own: {podRule, eventRule}}}
	p := ta.Spec.PrometheusCR
	if !p.Enabled {
		return g
	}
	g.cluster = []rbacv1.PolicyRule{namespaceRule}
	if len(p.AllowNamespaces) == 0 {
		g.cluster = append(g.cluster, monitorRules...)
		g.cluster = append(g.cluster, eventRule)
		g.clusterWide = true
	}
	for _, ns := range p.AllowNamespaces {
		if ns == own {
			g.rules[own] = append(g.rules[own], monitorRules...)
			continue
		}
		g.rules[ns] = append(append([]rbacv1.PolicyRule{}, monitorRules...), eventRule)
	}
	g.secrets = p.SecretNamespaces
	if len(g.secrets) == 0 {
		g.secrets = append([]string{own}, p.AllowNamespaces...)
	}
	slices.Sort(g.secrets)
	g.secrets = slices.Compact(g.secrets)
	return g
}

// foreign returns the namespaces other than the allocator's own in which g
// grants something, sorted, and "*" first when g grants cluster-wide.
func (g grants) foreign(own string) []string {
	var out []string
	for ns := range g.rules {
		if ns != own {
			out = append(out, ns)
		}
	}
	for _, ns := range g.secrets {
		if ns != own {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if g.clusterWide {
		out = append([]string{"*"}, out...)
	}
	return out
}

// allocatorRBAC returns the allocator's RBAC: owned objects in its own
// namespace, and the objects it cannot own (cluster-scoped, or in another
// namespace), labelled and annotated with AnnotationOwner. Without
// s.mayGrantOutside its namespace, an allocator that needs anything outside
// its own namespace but in the namespaces of optedIn gets ErrGrantNotAllowed
// instead; cluster-wide reads need s.mayGrantOutside.
func allocatorRBAC(ta *v1alpha1.TargetAllocator, s Settings, optedIn []string, saName string, labels map[string]string) (owned, foreign []client.Object, err error) {
	own := ta.Namespace
	g := allocatorGrants(ta)
	f := g.foreign(own)
	if !s.mayGrantOutside(own) {
		f = slices.DeleteFunc(f, func(ns string) bool { return slices.Contains(optedIn, ns) })
	}
	if len(f) > 0 && !s.mayGrantOutside(own) {
		where := strings.Join(f, ", ")
		if f[0] == "*" {
			where = "every namespace (prometheusCR without allowNamespaces)"
			if len(f) > 1 {
				where += ", " + strings.Join(f[1:], ", ")
			}
		}
		return nil, nil, fmt.Errorf("target allocator %s/%s %w: %s", own, ta.Name, ErrGrantNotAllowed, where)
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: own}}
	ownName := TargetAllocatorName(ta.Name)
	foreignName := ClusterRoleName(own, ta.Name)
	foreignMeta := func(ns, name string) metav1.ObjectMeta {
		m := Meta(ns, name, labels)
		m.Annotations = map[string]string{AnnotationOwner: own + "/" + ta.Name}
		return m
	}
	add := func(ns string, objs ...client.Object) {
		if ns == own {
			owned = append(owned, objs...)
		} else {
			foreign = append(foreign, objs...)
		}
	}
	nsMeta := func(ns, suffix string) metav1.ObjectMeta {
		if ns == own {
			return Meta(ns, dnsName(ownName, suffix), labels)
		}
		return foreignMeta(ns, dnsName(foreignName, suffix))
	}
	for _, ns := range slices.Sorted(maps.Keys(g.rules)) {
		m := nsMeta(ns, "")
		add(ns,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: m, Rules: g.rules[ns]},
			&rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
				ObjectMeta: *m.DeepCopy(),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: m.Name},
				Subjects:   subjects,
			})
	}
	for _, ns := range g.secrets {
		add(ns, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: nsMeta(ns, "-secrets"),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: SecretReaderClusterRole},
			Subjects:   subjects,
		})
	}
	if len(g.cluster) > 0 {
		foreign = append(foreign,
			&rbacv1.ClusterRole{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: foreignMeta("", foreignName),
				Rules:      g.cluster,
			},
			&rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: foreignMeta("", foreignName),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: foreignName},
				Subjects:   subjects,
			})
	}
	return owned, foreign, nil
}

// DiscoversOtherNamespaces says whether an allocator in namespace ns with
// prometheusCR p reads monitors of any namespace but its own: with no
// allowNamespaces (every namespace, deny-listed ones aside) or with another
// namespace among them. Whoever may create monitors there is then not
// whoever owns the allocator, so by default file access through monitors is
// denied, namespace selectors are ignored, the namespace label is enforced
// and a NetworkPolicy admits only the allocator's collectors.
func DiscoversOtherNamespaces(p v1beta1.TargetAllocatorPrometheusCR, ns string) bool {
	if len(p.AllowNamespaces) == 0 {
		return true
	}
	for _, n := range p.AllowNamespaces {
		if n != ns {
			return true
		}
	}
	return false
}

// The annotations of a TargetAllocator (or of an OpenTelemetryCollector, for
// the allocator it owns) that set shardwise's allocator keys the upstream
// CRD has no field for.
const (
	// AnnotationAllocatorPrefix is what they start with.
	AnnotationAllocatorPrefix = "allocator.shardwise.io/"
	// AnnotationAllocatorHandoff "false" turns the make-before-break handoff
	// off (handoff.enabled).
	AnnotationAllocatorHandoff = AnnotationAllocatorPrefix + "handoff"
	// AnnotationAllocatorHandoffSettle is handoff.settle, a duration.
	AnnotationAllocatorHandoffSettle = AnnotationAllocatorPrefix + "handoff-settle"
	// AnnotationAllocatorWeightsQueryURL is weights.query_url: learn
	// weights from this Prometheus-compatible API.
	AnnotationAllocatorWeightsQueryURL = AnnotationAllocatorPrefix + "weights-query-url"
)

// renderAllocatorAnnotations sets cfg's handoff and weights from the
// allocator annotations; a malformed value is an error naming it.
func renderAllocatorAnnotations(cfg *allocatorconfig.Allocator, annotations map[string]string) error {
	if v, ok := annotations[AnnotationAllocatorHandoff]; ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("annotation %s: %q is not true or false", AnnotationAllocatorHandoff, v)
		}
		cfg.Handoff.Enabled = &on
	}
	if v, ok := annotations[AnnotationAllocatorHandoffSettle]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("annotation %s: %q is not a positive duration such as 10s", AnnotationAllocatorHandoffSettle, v)
		}
		cfg.Handoff.Settle = d
	}
	if v, ok := annotations[AnnotationAllocatorWeightsQueryURL]; ok {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("annotation %s: %q is not an http(s) URL", AnnotationAllocatorWeightsQueryURL, v)
		}
		cfg.Weights.QueryURL = v
	}
	return nil
}
