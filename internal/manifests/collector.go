package manifests

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Settings are the operator-wide inputs of the builders.
type Settings struct {
	// CollectorImage is the collector image when the resource names none.
	CollectorImage string
	// TargetAllocatorImage is the allocator image (this repository's
	// cmd/allocator) when the resource names none.
	TargetAllocatorImage string
	// AllowClusterWideGrants lets the operator grant an allocator
	// permissions outside its own namespace (cluster-wide discovery of
	// prometheus-operator resources, Secrets of other namespaces). Off, such an
	// allocator is refused with ErrGrantNotAllowed.
	AllowClusterWideGrants bool
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
}

// BuildCollector returns the desired objects of a collector. referenced is
// the TargetAllocator the collector names with LabelTargetAllocator, nil
// when it names none or that one does not exist (yet): its mtls settles how
// the collectors poll it. It is the one place that switches on the mode:
// each mode has its own builder.
func BuildCollector(c *v1beta1.OpenTelemetryCollector, s Settings, referenced *v1alpha1.TargetAllocator) (Collector, error) {
	switch c.Spec.Mode {
	case v1beta1.ModeStatefulSet:
		return statefulSetCollector(c, s, referenced)
	default:
		return Collector{}, fmt.Errorf("%w: %q", ErrModeUnsupported, c.Spec.Mode)
	}
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

func statefulSetCollector(c *v1beta1.OpenTelemetryCollector, s Settings, referenced *v1alpha1.TargetAllocator) (Collector, error) {
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
	cfg, err := configMap(c.Spec.Config)
	if err != nil {
		return Collector{}, err
	}
	hash := Hash(rendered)
	name := CollectorName(instance)
	labels := Labels(ns, instance, ComponentCollector, name)
	selector := SelectorLabels(ns, instance, ComponentCollector)
	ports := ReceiverPorts(cfg)

	out := Collector{ConfigHash: hash, Selector: selector}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(ns, CollectorConfigMap(instance, hash), labels),
		Data:       map[string]string{CollectorConfigKey: rendered},
	}
	out.Objects = append(out.Objects, cm)

	sa := c.Spec.ServiceAccount
	if sa == "" {
		sa = name
		out.Objects = append(out.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(ns, name, labels),
		})
	}

	headless := service(ns, HeadlessService(instance), labels, selector, ports)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	headless.Spec.PublishNotReadyAddresses = true
	out.Objects = append(out.Objects, headless)
	out.Objects = append(out.Objects, service(ns, MonitoringService(instance), labels, selector, []corev1.ServicePort{{
		Name: "monitoring", Port: CollectorMonitoringPort, Protocol: corev1.ProtocolTCP, TargetPort: intOrStr(CollectorMonitoringPort),
	}}))
	if len(ports) > 0 {
		out.Objects = append(out.Objects, service(ns, CollectorService(instance), labels, selector, ports))
	}

	sts := collectorStatefulSet(c, s, name, labels, selector, sa, cm.Name, hash, ports)
	if mtls.IsEnabled() {
		pod := &sts.Spec.Template.Spec
		pod.Volumes = append(pod.Volumes, tlsVolume(collectorTLSVolume, mtls, ClientCertificateName(taName), clientCert))
		pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, tlsMount(collectorTLSVolume))
	}
	out.Objects = append(out.Objects, sts)
	out.Objects = append(out.Objects, pdb(ns, name, labels, selector, c.Spec.PodDisruptionBudget))

	if owned {
		ta, err := ownedTargetAllocator(c)
		if err != nil {
			return Collector{}, err
		}
		out.Objects = append(out.Objects, ta)
	}
	out.TargetAllocator = taName
	return out, nil
}

func collectorStatefulSet(c *v1beta1.OpenTelemetryCollector, s Settings, name string, labels, selector map[string]string,
	serviceAccount, configMap, hash string, ports []corev1.ServicePort,
) *appsv1.StatefulSet {
	spec := c.Spec
	image := spec.Image
	if image == "" {
		image = s.CollectorImage
	}
	args := []string{"--config=" + collectorConfigDir + "/" + CollectorConfigKey}
	for _, k := range slices.Sorted(maps.Keys(spec.Args)) {
		args = append(args, fmt.Sprintf("--%s=%s", k, spec.Args[k]))
	}
	env := collectorEnv(spec.Env)
	containerPorts := []corev1.ContainerPort{{Name: metricsPortName, ContainerPort: CollectorMonitoringPort, Protocol: corev1.ProtocolTCP}}
	for _, p := range ports {
		// The metrics port is declared once, whoever else listens on it.
		if p.Port == CollectorMonitoringPort {
			continue
		}
		containerPorts = append(containerPorts, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: p.Protocol})
	}
	annotations := maps.Clone(spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationConfigHash] = hash
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
		ObjectMeta: meta(c.Namespace, name, labels),
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector:            &metav1.LabelSelector{MatchLabels: selector},
			ServiceName:         serviceName,
			PodManagementPolicy: policy,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccount,
					SecurityContext:    podSecurityContext(spec.PodSecurityContext),
					Containers: []corev1.Container{{
						Name:            CollectorContainer,
						SecurityContext: containerSecurityContext(spec.SecurityContext),
						Image:           image,
						ImagePullPolicy: spec.ImagePullPolicy,
						Args:            args,
						Env:             env,
						Ports:           containerPorts,
						Resources:       spec.Resources,
						VolumeMounts:    []corev1.VolumeMount{{Name: collectorConfigVolume, MountPath: collectorConfigDir}},
					}},
					Volumes: []corev1.Volume{{
						Name: collectorConfigVolume,
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
							Items:                []corev1.KeyToPath{{Key: CollectorConfigKey, Path: CollectorConfigKey}},
						}},
					}},
					NodeSelector: spec.NodeSelector,
					Tolerations:  spec.Tolerations,
					Affinity:     spec.Affinity,
				},
			},
			VolumeClaimTemplates: spec.VolumeClaimTemplates,
		},
	}
}

// collectorEnv is the user's env, preceded by POD_NAME (the collector id the
// receiver sends to the allocator) unless the user defines it: a duplicate
// key would be refused by server-side apply.
func collectorEnv(user []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range user {
		if e.Name == "POD_NAME" {
			return slices.Clone(user)
		}
	}
	return append([]corev1.EnvVar{{
		Name:      "POD_NAME",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
	}}, user...)
}

// containerSecurityContext is the user's container security context, or the
// restricted one of the Pod Security Standards.
func containerSecurityContext(user *corev1.SecurityContext) *corev1.SecurityContext {
	if user != nil {
		return user.DeepCopy()
	}
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// podSecurityContext is the user's pod security context, or the restricted
// one of the Pod Security Standards.
func podSecurityContext(user *corev1.PodSecurityContext) *corev1.PodSecurityContext {
	if user != nil {
		return user.DeepCopy()
	}
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// ownedTargetAllocator is the TargetAllocator a collector creates for itself,
// carrying the scrape configs of its prometheus receiver.
func ownedTargetAllocator(c *v1beta1.OpenTelemetryCollector) (*v1alpha1.TargetAllocator, error) {
	scrapeConfigs, err := ScrapeConfigs(c.Spec.Config)
	if err != nil {
		return nil, err
	}
	e := c.Spec.TargetAllocator
	taLabels := Labels(c.Namespace, c.Name, ComponentTargetAllocator, TargetAllocatorName(c.Name))
	return &v1alpha1.TargetAllocator{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "TargetAllocator"},
		ObjectMeta: meta(c.Namespace, c.Name, taLabels),
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
		},
	}, nil
}

func meta(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: maps.Clone(labels)}
}

func service(ns, name string, labels, selector map[string]string, ports []corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(ns, name, labels),
		Spec: corev1.ServiceSpec{
			Selector: maps.Clone(selector),
			Ports:    slices.Clone(ports),
		},
	}
}

func pdb(ns, name string, labels, selector map[string]string, spec *v1beta1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(ns, name, labels),
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
