package manifests

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Settings are the operator-wide inputs of the builders.
type Settings struct {
	// CollectorImage is the collector image when the resource names none.
	CollectorImage string
	// TargetAllocatorImage is the allocator image (this repository's
	// cmd/allocator) when the resource names none.
	TargetAllocatorImage string
	// AllowClusterWideGrants lets the operator grant every allocator
	// permissions outside its own namespace (cluster-wide discovery of
	// prometheus-operator resources, Secrets of other namespaces). Off, only
	// allocators in GrantNamespaces get them; others are refused with
	// ErrGrantNotAllowed.
	AllowClusterWideGrants bool
	// GrantNamespaces are the namespaces whose allocators may be granted
	// permissions outside their own namespace: the platform team's, not the
	// tenants'.
	GrantNamespaces []string
	// AnnotationsFilter are the annotation keys (unanchored regular
	// expressions, as upstream's --annotations-filter) of a collector's
	// metadata and podAnnotations that are not copied to its pods.
	AnnotationsFilter []*regexp.Regexp
	// LabelsFilter are the label keys (unanchored regular expressions, as
	// upstream's --labels-filter) of a collector that are not copied to the
	// objects built for it.
	LabelsFilter []*regexp.Regexp
	// ComponentRBACEverywhere grants the collectors of every namespace the
	// rights their components need (upstream's --create-rbac-permissions);
	// ComponentRBACNamespaces grants them to the collectors of these
	// namespaces only.
	ComponentRBACEverywhere bool
	ComponentRBACNamespaces []string
	// OperatorNamespace is the operator's namespace, admitted by the
	// allocators' NetworkPolicies; empty admits no namespace.
	OperatorNamespace string
}

// mayGrantOutside says whether an allocator in namespace ns may be granted
// permissions outside it.
func (s Settings) mayGrantOutside(ns string) bool {
	return s.AllowClusterWideGrants || slices.Contains(s.GrantNamespaces, ns)
}

// Collector is the desired state of one OpenTelemetryCollector.
type Collector struct {
	// Objects are the objects to apply, in creation order.
	Objects []client.Object
	// ConfigHash is the hash of the rendered collector config.
	ConfigHash string
	// Selector selects the collector pods.
	Selector map[string]string
	// TargetAllocator is the name of the allocator the collectors poll, or ""
	// when the allocator is disabled.
	TargetAllocator string
	// ClusterObjects are the cluster-scoped objects the collector cannot
	// own: its components' ClusterRole and binding, annotated with
	// AnnotationOwner.
	ClusterObjects []client.Object
	// ComponentRBACNotGranted says which components' rights the operator did
	// not grant and why; "" when it granted all or none were needed.
	ComponentRBACNotGranted string
}

// BuildCollector returns the desired objects of a collector. referenced is
// the TargetAllocator the collector names with LabelTargetAllocator, nil
// when it names none or that one does not exist (yet): its mtls settles how
// the collectors poll it. It is the one place that switches on the mode: the
// workload modes share the ConfigMap, ServiceAccount, Services and pod
// template, and differ in the workload kind and the objects that go with it
// (PodDisruptionBudget, autoscaler); mode sidecar builds no workload (the pod
// webhook injects the collector), only its PodMonitor with enableMetrics.
//
// The ServiceMonitor or PodMonitor of enableMetrics is built whether or not
// prometheus-operator's API is served: the caller leaves it out when not.
func BuildCollector(c *v1beta1.OpenTelemetryCollector, s Settings, referenced *v1alpha1.TargetAllocator) (Collector, error) {
	switch c.Spec.Mode {
	case v1beta1.ModeStatefulSet, v1beta1.ModeDeployment, v1beta1.ModeDaemonSet, "":
		return workloadCollector(c, s, referenced)
	case v1beta1.ModeSidecar:
		return sidecarCollector(c)
	default:
		return Collector{}, fmt.Errorf("%w: %q", ErrModeUnsupported, c.Spec.Mode)
	}
}

// ModeOf is the collector's mode, deployment when unset (the schema default).
func ModeOf(c *v1beta1.OpenTelemetryCollector) v1beta1.Mode {
	if c.Spec.Mode == "" {
		return v1beta1.ModeDeployment
	}
	return c.Spec.Mode
}

// TargetAllocatorRef is the name of the TargetAllocator a collector uses: the
// one its LabelTargetAllocator label names, or one of its own name.
func TargetAllocatorRef(c *v1beta1.OpenTelemetryCollector) (name string, owned bool) {
	if n := c.Labels[LabelTargetAllocator]; n != "" {
		return n, false
	}
	return c.Name, true
}

// AllocatorMTLS is the mtls setting of the allocator a collector polls: its
// own (spec.targetAllocator.mtls), or that of the TargetAllocator it names
// (referenced, nil when unknown).
func AllocatorMTLS(c *v1beta1.OpenTelemetryCollector, referenced *v1alpha1.TargetAllocator) *v1beta1.TargetAllocatorMTLS {
	if !c.Spec.TargetAllocator.Enabled {
		return nil
	}
	if _, owned := TargetAllocatorRef(c); owned {
		return c.Spec.TargetAllocator.Mtls
	}
	if referenced != nil {
		return referenced.Spec.Mtls
	}
	return nil
}

func workloadCollector(c *v1beta1.OpenTelemetryCollector, s Settings, referenced *v1alpha1.TargetAllocator) (Collector, error) {
	ns, instance := c.Namespace, c.Name
	var taName string
	var owned bool
	if c.Spec.TargetAllocator.Enabled {
		taName, owned = TargetAllocatorRef(c)
	}
	mtls := AllocatorMTLS(c, referenced)
	if err := validateMTLS(mtls); err != nil {
		return Collector{}, err
	}
	rendered, err := RenderCollectorConfig(c, taName, mtls)
	if err != nil {
		return Collector{}, err
	}
	if _, err := configMap(c.Spec.Config); err != nil {
		return Collector{}, err
	}
	hash := Hash(rendered)
	name := CollectorName(instance)
	labels := withResourceLabels(c.Labels, s.LabelsFilter, Labels(ns, instance, ComponentCollector, name))
	labels[LabelVersion] = VersionLabel(cmp.Or(c.Spec.Image, s.CollectorImage))
	selector := SelectorLabels(ns, instance, ComponentCollector)
	ports, err := servicePorts(c.Spec.Ports, c.Spec.Config)
	if err != nil {
		return Collector{}, err
	}

	out := Collector{ConfigHash: hash, Selector: selector}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: Meta(ns, CollectorConfigMap(instance, hash), labels),
		Data:       map[string]string{CollectorConfigKey: rendered},
	}
	out.Objects = append(out.Objects, cm)

	sa := c.Spec.ServiceAccount
	if sa == "" {
		sa = name
		out.Objects = append(out.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: Meta(ns, name, labels),
		})
	}

	out.Objects = append(out.Objects, collectorServices(c, labels, selector, ports)...)
	addComponentRBAC(&out, c, s, sa, labels)

	tmpl, err := podTemplate(c, s, labels, sa, cm.Name, hash)
	if err != nil {
		return Collector{}, err
	}
	if mtls.IsEnabled() {
		pod := &tmpl.Spec
		pod.Volumes = append(pod.Volumes, tlsVolume(collectorTLSVolume, mtls, ClientCertificateName(taName), clientCert))
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, tlsMount(collectorTLSVolume))
	}
	out.Objects = append(out.Objects, workloadObjects(c, name, labels, selector, tmpl)...)
	if np := networkPolicy(c, selector, tmpl.Spec.Containers[0].Ports); np != nil {
		out.Objects = append(out.Objects, np)
	}
	exporters := container.ExporterPorts(c.Spec.Config)
	if ing := ingress(c, ports, exporters); ing != nil {
		out.Objects = append(out.Objects, ing)
	}
	out.Objects = append(out.Objects, serviceMonitors(c, exporterPortNames(ports, exporters))...)

	if owned {
		ta, err := ownedTargetAllocator(c, s.LabelsFilter)
		if err != nil {
			return Collector{}, err
		}
		out.Objects = append(out.Objects, ta)
	}
	out.TargetAllocator = taName
	return out, nil
}

// addComponentRBAC adds to out the rights the collector's components need
// from the API server (ServiceAccount sa) where the operator grants them, and
// otherwise says in out.ComponentRBACNotGranted which components go without.
func addComponentRBAC(out *Collector, c *v1beta1.OpenTelemetryCollector, s Settings, sa string, labels map[string]string) {
	rules := CollectorComponentRules(c.Spec.Config)
	if len(rules) == 0 {
		return
	}
	ns := c.Namespace
	if s.ComponentRBACEverywhere || slices.Contains(s.ComponentRBACNamespaces, ns) {
		owned, cluster := componentRBAC(ns, c.Name, sa, labels, rules)
		out.Objects = append(out.Objects, owned...)
		out.ClusterObjects = cluster
		return
	}
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Component
	}
	out.ComponentRBACNotGranted = fmt.Sprintf("%s need rights from the API server that the operator grants only to collectors of the namespaces in --collector-rbac-namespaces (or every one with --create-rbac-permissions); grant them to ServiceAccount %s/%s yourself, or ask the operator's administrator",
		strings.Join(names, ", "), ns, sa)
}

// collectorServices are the headless, monitoring and (with ports) base
// Services of the collector pods.
func collectorServices(c *v1beta1.OpenTelemetryCollector, labels, selector map[string]string, ports []corev1.ServicePort) []client.Object {
	ns, instance, mode := c.Namespace, c.Name, ModeOf(c)
	metrics := container.MetricsPort(c.Spec.Config)
	var objs []client.Object
	// A DaemonSet's collector serves its own node: node-local traffic stays
	// on the node, as upstream.
	var local *corev1.ServiceInternalTrafficPolicy
	if mode == v1beta1.ModeDaemonSet {
		local = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
	}
	// The address and affinity settings of the resource apply to the three
	// Services, as upstream.
	addressed := func(svc *corev1.Service) *corev1.Service {
		svc.Spec.IPFamilies = slices.Clone(c.Spec.IPFamilies)
		svc.Spec.IPFamilyPolicy = c.Spec.IPFamilyPolicy
		svc.Spec.TrafficDistribution = c.Spec.TrafficDistribution
		if c.Spec.SessionAffinity != nil {
			svc.Spec.SessionAffinity = *c.Spec.SessionAffinity
		}
		svc.Spec.SessionAffinityConfig = c.Spec.SessionAffinityConfig
		return svc
	}
	headless := addressed(Service(ns, HeadlessService(instance), serviceLabels(labels, ServiceTypeHeadless), selector, ports))
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	// The governing Service of a StatefulSet publishes its pods' DNS names
	// before they are ready.
	headless.Spec.PublishNotReadyAddresses = mode == v1beta1.ModeStatefulSet
	headless.Spec.InternalTrafficPolicy = local
	objs = append(objs, headless)
	objs = append(objs, addressed(Service(ns, MonitoringService(instance), serviceLabels(labels, ServiceTypeMonitoring), selector, []corev1.ServicePort{{
		Name: "monitoring", Port: metrics, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(metrics),
	}})))
	if len(ports) > 0 {
		base := addressed(Service(ns, CollectorService(instance), serviceLabels(labels, ServiceTypeBase), selector, ports))
		base.Spec.InternalTrafficPolicy = local
		objs = append(objs, base)
	}
	return objs
}

// workloadObjects are the workload of the collector's mode, its
// PodDisruptionBudget (but for a DaemonSet) and autoscaler.
func workloadObjects(c *v1beta1.OpenTelemetryCollector, name string, labels, selector map[string]string, tmpl corev1.PodTemplateSpec) []client.Object {
	ns, mode := c.Namespace, ModeOf(c)
	var objs []client.Object
	switch mode {
	case v1beta1.ModeStatefulSet:
		objs = append(objs, collectorStatefulSet(c, name, labels, selector, tmpl))
	case v1beta1.ModeDeployment:
		objs = append(objs, collectorDeployment(c, name, labels, selector, tmpl))
	case v1beta1.ModeDaemonSet:
		objs = append(objs, collectorDaemonSet(c, name, labels, selector, tmpl))
	}
	if mode != v1beta1.ModeDaemonSet {
		objs = append(objs, pdb(ns, name, labels, selector, c.Spec.PodDisruptionBudget))
	}
	if hpa := autoscaler(c, name, labels); hpa != nil {
		objs = append(objs, hpa)
	}
	return objs
}

// sidecarCollector is mode sidecar: the pod webhook injects the collector
// into application pods, which belong to their own workloads, so the
// operator builds no workload, Service or autoscaler; nor a ConfigMap or
// ServiceAccount, which the injected container (configured through its
// environment, running as the application pod's account) would not use. With
// observability.metrics.enableMetrics it builds the PodMonitor that scrapes
// the injected collectors.
func sidecarCollector(c *v1beta1.OpenTelemetryCollector) (Collector, error) {
	if _, err := RenderCollectorConfig(c, "", nil); err != nil {
		return Collector{}, err
	}
	out := Collector{Selector: map[string]string{LabelSidecarInjected: InstanceLabel(c.Namespace, c.Name)}}
	pm, err := podMonitor(c)
	if err != nil {
		return Collector{}, err
	}
	if pm != nil {
		out.Objects = append(out.Objects, pm)
	}
	return out, nil
}

// LabelSidecarInjected is the label the pod webhook puts on the pods it
// injected a sidecar-mode collector into; its value is InstanceLabel of the
// collector, as upstream.
const LabelSidecarInjected = "sidecar.opentelemetry.io/injected"

// replicas is the collector's replicas, at least the autoscaler's minimum,
// as upstream: the workload never runs fewer pods than the autoscaler allows.
func replicas(spec v1beta1.OpenTelemetryCollectorSpec) int32 {
	n := ptr.Deref(spec.Replicas, 1)
	if a := spec.Autoscaler; a != nil && a.MaxReplicas != nil && a.MinReplicas != nil && *a.MinReplicas > n {
		n = *a.MinReplicas
	}
	return n
}

func collectorStatefulSet(c *v1beta1.OpenTelemetryCollector, name string, labels, selector map[string]string, tmpl corev1.PodTemplateSpec) *appsv1.StatefulSet {
	spec := c.Spec
	serviceName := spec.ServiceName
	if serviceName == "" {
		serviceName = HeadlessService(c.Name)
	}
	policy := spec.PodManagementPolicy
	if policy == "" {
		policy = appsv1.ParallelPodManagement
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: Meta(c.Namespace, name, labels),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(replicas(spec)),
			Selector:                             &metav1.LabelSelector{MatchLabels: selector},
			ServiceName:                          serviceName,
			PodManagementPolicy:                  policy,
			Template:                             tmpl,
			VolumeClaimTemplates:                 spec.VolumeClaimTemplates,
			PersistentVolumeClaimRetentionPolicy: spec.PersistentVolumeClaimRetentionPolicy,
		},
	}
}

func collectorDeployment(c *v1beta1.OpenTelemetryCollector, name string, labels, selector map[string]string, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: Meta(c.Namespace, name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas(c.Spec)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
		},
	}
	if s := c.Spec.DeploymentUpdateStrategy; s != nil {
		d.Spec.Strategy = *s.DeepCopy()
	}
	return d
}

func collectorDaemonSet(c *v1beta1.OpenTelemetryCollector, name string, labels, selector map[string]string, tmpl corev1.PodTemplateSpec) *appsv1.DaemonSet {
	// A DaemonSet places one pod per node: spreading constraints do not
	// apply, as upstream.
	tmpl.Spec.TopologySpreadConstraints = nil
	d := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: Meta(c.Namespace, name, labels),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
		},
	}
	if s := c.Spec.DaemonSetUpdateStrategy; s != nil {
		d.Spec.UpdateStrategy = *s.DeepCopy()
	}
	return d
}

// podTemplate is the collector pod of every workload mode.
func podTemplate(c *v1beta1.OpenTelemetryCollector, s Settings, labels map[string]string, serviceAccount, configMap, hash string) (corev1.PodTemplateSpec, error) {
	spec := c.Spec
	annotations := podAnnotations(c, s.AnnotationsFilter)
	annotations[AnnotationConfigHash] = hash

	volumes := []corev1.Volume{{
		Name: collectorConfigVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			Items:                []corev1.KeyToPath{{Key: CollectorConfigKey, Path: CollectorConfigKey}},
		}},
	}}
	volumes = append(volumes, container.ConfigMapVolumes(&spec)...)
	volumes = append(volumes, spec.Volumes...)
	podSecurity := container.PodSecurityContext(spec.PodSecurityContext, spec.SecurityContext)
	ctr, err := container.Build(c, container.Options{
		Image:              s.CollectorImage,
		ConfigVolume:       collectorConfigVolume,
		ConfigFile:         CollectorConfigKey,
		PodSecurityContext: podSecurity,
	})
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	pod := corev1.PodSpec{
		ServiceAccountName:            serviceAccount,
		SecurityContext:               podSecurity,
		InitContainers:                slices.Clone(spec.InitContainers),
		Containers:                    append([]corev1.Container{ctr}, spec.AdditionalContainers...),
		Volumes:                       volumes,
		NodeSelector:                  spec.NodeSelector,
		Tolerations:                   spec.Tolerations,
		Affinity:                      spec.Affinity,
		TopologySpreadConstraints:     slices.Clone(spec.TopologySpreadConstraints),
		HostNetwork:                   ptr.Deref(spec.HostNetwork, false),
		HostPID:                       ptr.Deref(spec.HostPID, false),
		HostUsers:                     spec.HostUsers,
		HostAliases:                   slices.Clone(spec.HostAliases),
		ShareProcessNamespace:         spec.ShareProcessNamespace,
		PriorityClassName:             ptr.Deref(spec.PriorityClassName, ""),
		TerminationGracePeriodSeconds: spec.TerminationGracePeriodSeconds,
		DNSPolicy:                     DNSPolicy(spec.DNSPolicy, ptr.Deref(spec.HostNetwork, false), spec.PodDNSConfig),
		DNSConfig:                     spec.PodDNSConfig,
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: annotations},
		Spec:       pod,
	}, nil
}

// Pod annotations upstream stamps for annotation-based Prometheus discovery,
// unless observability.metrics.disablePrometheusAnnotations.
const (
	AnnotationPrometheusScrape = "prometheus.io/scrape"
	AnnotationPrometheusPort   = "prometheus.io/port"
	AnnotationPrometheusPath   = "prometheus.io/path"
	// AnnotationPrometheusAdded marks a pod template where the operator
	// added at least one of them, as upstream.
	AnnotationPrometheusAdded = "operator.opentelemetry.io/prometheus-annotations-added"
)

// withResourceLabels are the labels of an object built for a resource, as
// upstream's manifestutils.Labels: the resource's own labels but those
// filter matches, then the operator's (ours), which win, except that the
// resource's app.kubernetes.io/name is kept.
func withResourceLabels(resource map[string]string, filter []*regexp.Regexp, ours map[string]string) map[string]string {
	out := make(map[string]string, len(resource)+len(ours))
	for k, v := range resource {
		if !matchesAny(filter, k) {
			out[k] = v
		}
	}
	name, named := out[LabelName]
	maps.Copy(out, ours)
	if named {
		out[LabelName] = name
	}
	return out
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	return slices.ContainsFunc(res, func(re *regexp.Regexp) bool { return re.MatchString(s) })
}

// AnnotationRestartedAt on a collector resource restarts its pods: the
// operator copies it to its workload's pod template whatever the annotation
// filters say, which rolls them as kubectl rollout restart does (it stamps
// the same annotation). The OpAMP bridge's restart command sets it.
const AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"

// podAnnotations are the collector pod's annotations, as upstream:
// spec.podAnnotations, then the resource's own annotations where
// podAnnotations does not set the key (but for those that describe the
// resource itself: kubectl's last applied configuration, the stashed spec of
// the other API version), then the prometheus.io annotations where neither
// sets them, unless disablePrometheusAnnotations. Keys filter matches are
// left out of the first two. Server-side apply removes
// any of them from the pods when it is no longer desired.
func podAnnotations(c *v1beta1.OpenTelemetryCollector, filter []*regexp.Regexp) map[string]string {
	filtered := func(k string) bool { return matchesAny(filter, k) }
	out := map[string]string{}
	for k, v := range c.Spec.PodAnnotations {
		if !filtered(k) {
			out[k] = v
		}
	}
	for k, v := range c.Annotations {
		switch k {
		case corev1.LastAppliedConfigAnnotation, v1alpha1.AnnotationV1alpha1Spec, v1alpha1.AnnotationV1beta1Spec:
			continue
		case AnnotationRestartedAt:
			out[k] = v // a restart asked for on the resource, filters or not
			continue
		}
		if _, ok := out[k]; !ok && !filtered(k) {
			out[k] = v
		}
	}
	if c.Spec.Observability.Metrics.DisablePrometheusAnnotations {
		return out
	}
	added := false
	for k, v := range map[string]string{
		AnnotationPrometheusScrape: "true",
		AnnotationPrometheusPort:   strconv.Itoa(int(container.MetricsPort(c.Spec.Config))),
		AnnotationPrometheusPath:   "/metrics",
	} {
		if _, ok := out[k]; !ok {
			out[k] = v
			added = true
		}
	}
	if added {
		out[AnnotationPrometheusAdded] = "true"
	}
	return out
}

// DNSPolicy is the DNS policy of an operand pod, as upstream's
// manifestutils.GetDNSPolicy: the explicit one if set; else None when the pod
// DNS config names nameservers (which take precedence over the host
// network), ClusterFirstWithHostNet on the host network, and the API server's
// default (ClusterFirst) otherwise.
func DNSPolicy(explicit *corev1.DNSPolicy, hostNetwork bool, cfg *corev1.PodDNSConfig) corev1.DNSPolicy {
	switch {
	case explicit != nil:
		return *explicit
	case cfg != nil && len(cfg.Nameservers) > 0:
		return corev1.DNSNone
	case hostNetwork:
		return corev1.DNSClusterFirstWithHostNet
	}
	return ""
}

// autoscaler is the HorizontalPodAutoscaler of a collector with
// autoscaler.maxReplicas, or nil. It scales the OpenTelemetryCollector itself
// through its scale subresource, as upstream, so that the operator stays the
// only writer of the workload's replicas.
func autoscaler(c *v1beta1.OpenTelemetryCollector, name string, labels map[string]string) *autoscalingv2.HorizontalPodAutoscaler {
	a := c.Spec.Autoscaler
	if a == nil || a.MaxReplicas == nil {
		return nil
	}
	min := a.MinReplicas
	if min == nil {
		min = ptr.To(ptr.Deref(c.Spec.Replicas, 1))
	}
	var metrics []autoscalingv2.MetricSpec
	resource := func(r corev1.ResourceName, target *int32) {
		metrics = append(metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: r, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(*target),
			}},
		})
	}
	cpu := a.TargetCPUUtilization
	if cpu == nil && a.TargetMemoryUtilization == nil {
		cpu = ptr.To[int32](90)
	}
	if a.TargetMemoryUtilization != nil {
		resource(corev1.ResourceMemory, a.TargetMemoryUtilization)
	}
	if cpu != nil {
		resource(corev1.ResourceCPU, cpu)
	}
	for _, m := range a.Metrics {
		if m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil {
			metrics = append(metrics, autoscalingv2.MetricSpec{Type: m.Type, Pods: m.Pods.DeepCopy()})
		}
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: Meta(c.Namespace, name, labels),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: v1beta1.GroupVersion.String(),
				Kind:       "OpenTelemetryCollector",
				Name:       c.Name,
			},
			MinReplicas: min,
			MaxReplicas: *a.MaxReplicas,
			Metrics:     metrics,
			Behavior:    a.Behavior.DeepCopy(),
		},
	}
}

// ownedTargetAllocator is the TargetAllocator a collector creates for itself,
// carrying the scrape configs of its prometheus receiver.
func ownedTargetAllocator(c *v1beta1.OpenTelemetryCollector, labelsFilter []*regexp.Regexp) (*v1alpha1.TargetAllocator, error) {
	scrapeConfigs, err := ScrapeConfigs(c.Spec.Config)
	if err != nil {
		return nil, err
	}
	e := c.Spec.TargetAllocator
	taLabels := withResourceLabels(c.Labels, labelsFilter, Labels(c.Namespace, c.Name, ComponentTargetAllocator, TargetAllocatorName(c.Name)))
	meta := Meta(c.Namespace, c.Name, taLabels)
	for k, v := range c.Annotations {
		if strings.HasPrefix(k, AnnotationAllocatorPrefix) {
			if meta.Annotations == nil {
				meta.Annotations = map[string]string{}
			}
			meta.Annotations[k] = v
		}
	}
	return &v1alpha1.TargetAllocator{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "TargetAllocator"},
		ObjectMeta: meta,
		Spec: v1alpha1.TargetAllocatorSpec{
			ManagementState:              v1beta1.ManagementStateManaged,
			Replicas:                     e.Replicas,
			Image:                        e.Image,
			ServiceAccount:               e.ServiceAccount,
			Resources:                    e.Resources,
			Env:                          e.Env,
			NodeSelector:                 e.NodeSelector,
			Tolerations:                  e.Tolerations,
			Affinity:                     e.Affinity,
			PodDisruptionBudget:          e.PodDisruptionBudget,
			AllocationStrategy:           e.AllocationStrategy,
			FilterStrategy:               e.FilterStrategy,
			ScrapeConfigs:                scrapeConfigs,
			PrometheusCR:                 e.PrometheusCR,
			CollectorNotReadyGracePeriod: e.CollectorNotReadyGracePeriod,
			AllowInsecureAuthSecrets:     e.AllowInsecureAuthSecrets,
			Mtls:                         e.Mtls,
			SecurityContext:              e.SecurityContext,
			PodSecurityContext:           e.PodSecurityContext,
			Observability:                e.Observability,
		},
	}, nil
}

// Meta is the metadata of a namespaced object the builders make: its
// namespace, name and a copy of labels.
func Meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: maps.Clone(labels)}
}

// Service is a Service selecting selector with ports (copied).
func Service(ns, name string, labels, selector map[string]string, ports []corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: Meta(ns, name, labels),
		Spec: corev1.ServiceSpec{
			Selector: maps.Clone(selector),
			Ports:    slices.Clone(ports),
		},
	}
}

func pdb(ns, name string, labels, selector map[string]string, spec *v1beta1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: Meta(ns, name, labels),
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)}},
	}
	switch {
	case spec != nil && (spec.MinAvailable != nil || spec.MaxUnavailable != nil):
		p.Spec.MinAvailable = spec.MinAvailable
		p.Spec.MaxUnavailable = spec.MaxUnavailable
	default:
		p.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	return p
}

func intOrStr(port int32) intstr.IntOrString { return intstr.FromInt32(port) }
