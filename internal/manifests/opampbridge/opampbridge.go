// Package opampbridge builds the desired objects of an OpAMPBridge: the
// bridge's ConfigMap (remoteconfiguration.yaml, with the upstream operator's
// keys), Deployment, Service, ServiceAccount and the RBAC the bridge needs to
// read and write the collectors it manages. The builders are pure: a resource
// and settings in, objects out.
package opampbridge

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Names, keys and ports of the built objects, as in the upstream operator.
const (
	// Component is the component label value of the bridge's objects.
	Component = "opentelemetry-opamp-bridge"
	// ConfigKey is the ConfigMap key of the bridge's configuration file.
	ConfigKey = "remoteconfiguration.yaml"
	// Container is the name of the bridge container.
	Container = "opamp-bridge-container"
	// AnnotationConfigHash on the pod template carries the SHA-256 of the
	// configuration file, so an edit rolls the pod.
	AnnotationConfigHash = "opentelemetry-opampbridge-config/hash"

	configVolume    = "opamp-bridge-internal"
	configDir       = "/conf"
	opampPort       = 8080
	healthzPort     = 8081
	servicePort     = 80
	servicePortName = "opamp-bridge"
	namespaceEnv    = "OTELCOL_NAMESPACE"
)

// Settings are the operator-wide inputs of the builder.
type Settings struct {
	// Image is the bridge image (this repository's cmd/opamp-bridge) when
	// the resource names none.
	Image string
	// ClusterWide grants the bridge the collectors and pods of every
	// namespace (a ClusterRole) instead of its own namespace (a Role). The
	// operator sets it only for namespaces its administrator opted in.
	ClusterWide bool
}

// ErrClusterWideImage refuses a cluster-wide bridge that names its own
// image: a cluster-wide bridge runs the operator's bridge image only.
var ErrClusterWideImage = errors.New("a cluster-wide OpAMP bridge runs the operator's bridge image only")

// Bridge is the desired state of one OpAMPBridge.
type Bridge struct {
	// Objects are the namespaced objects, owned by the resource.
	Objects []client.Object
	// ClusterObjects are the cluster-scoped RBAC objects of a cluster-wide
	// bridge. A namespaced resource cannot own them; the reconciler removes
	// them with a finalizer.
	ClusterObjects []client.Object
	// ConfigHash is the SHA-256 of the rendered configuration file.
	ConfigHash string
	// Image is the bridge image.
	Image string
}

// Name is the name of every namespaced object of the bridge named instance.
func Name(instance string) string { return truncate(instance, "-opamp-bridge") }

// ClusterRoleName is the name of the cluster-scoped RBAC of a cluster-wide
// bridge: its namespace, name and a hash of both, since names are
// cluster-unique and ("team", "a-x") and ("team-a", "x") must not share one.
func ClusterRoleName(namespace, instance string) string {
	return manifests.ClusterScopedName(namespace, instance, "-opamp-bridge")
}

func truncate(instance, suffix string) string {
	const maxLen = 63
	if over := len(instance) + len(suffix) - maxLen; over > 0 {
		instance = instance[:len(instance)-over]
		for len(instance) > 0 && (instance[len(instance)-1] == '-' || instance[len(instance)-1] == '.') {
			instance = instance[:len(instance)-1]
		}
	}
	return instance + suffix
}

// Build returns the desired objects of a bridge.
func Build(b *v1alpha1.OpAMPBridge, s Settings) (Bridge, error) {
	ns := b.Namespace
	name := Name(b.Name)
	labels := manifests.Labels(ns, b.Name, Component, name)
	selector := manifests.SelectorLabels(ns, b.Name, Component)

	rendered, err := RenderConfig(b)
	if err != nil {
		return Bridge{}, err
	}
	hash := manifests.Hash(rendered)
	image := b.Spec.Image
	if image == "" {
		image = s.Image
	}
	if s.ClusterWide && image != s.Image {
		// Whoever may edit the bridge would otherwise run any image with
		// rights over every collector of the cluster.
		return Bridge{}, fmt.Errorf("%w: image %s is not the operator's bridge image %s (--opamp-bridge-image); remove spec.image", ErrClusterWideImage, image, s.Image)
	}
	out := Bridge{ConfigHash: hash, Image: image}
	out.Objects = append(out.Objects, &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: manifests.Meta(ns, name, labels),
		Data:       map[string]string{ConfigKey: rendered},
	})
	sa := b.Spec.ServiceAccount
	if sa == "" {
		sa = name
		out.Objects = append(out.Objects, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: manifests.Meta(ns, name, labels),
		})
		if s.ClusterWide {
			out.ClusterObjects = clusterRBAC(b, name)
		} else {
			out.Objects = append(out.Objects, namespacedRBAC(b, name, labels)...)
		}
	}
	if svc := service(b, name, labels, selector); svc != nil {
		out.Objects = append(out.Objects, svc)
	}
	if b.Spec.ServeAgents {
		out.Objects = append(out.Objects, networkPolicy(b, s, name, labels, selector))
	}
	out.Objects = append(out.Objects, deployment(b, s, image, name, labels, selector, sa, hash))
	return out, nil
}

// networkPolicy admits to the bridge's OpAMP port only collector pods: of
// its namespace, or of every namespace for a cluster-wide bridge. Kubelet
// probes come from the node and are not subject to it on the usual CNIs.
func networkPolicy(b *v1alpha1.OpAMPBridge, s Settings, name string, labels, selector map[string]string) *networkingv1.NetworkPolicy {
	peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{manifests.LabelComponent: manifests.ComponentCollector},
	}}
	if s.ClusterWide {
		peer.NamespaceSelector = &metav1.LabelSelector{}
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: manifests.Meta(b.Namespace, name, labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(opampPort))}},
				From:  []networkingv1.NetworkPolicyPeer{peer},
			}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
}

// RenderConfig renders remoteconfiguration.yaml: the spec's connection
// settings (v1alpha1.OpAMPBridgeConnection, the type the bridge parses),
// with the keys of the upstream operator's bridge configuration.
// ReportsStatus is always on.
func RenderConfig(b *v1alpha1.OpAMPBridge) (string, error) {
	cfg := *b.Spec.OpAMPBridgeConnection.DeepCopy()
	if cfg.Capabilities == nil {
		cfg.Capabilities = map[v1alpha1.OpAMPBridgeCapability]bool{}
	}
	cfg.Capabilities[v1alpha1.OpAMPBridgeCapabilityReportsStatus] = true
	y, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("render bridge config: %w", err)
	}
	return string(y), nil
}

// service publishes the OpAMP port when the bridge serves agents, and the
// spec's ports; nil when that is none.
func service(b *v1alpha1.OpAMPBridge, name string, labels, selector map[string]string) *corev1.Service {
	ports := slices.Clone(b.Spec.Ports)
	if b.Spec.ServeAgents {
		ports = append(ports, corev1.ServicePort{
			Name: servicePortName, Port: servicePort, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromInt32(opampPort),
		})
	}
	if len(ports) == 0 {
		return nil
	}
	svc := manifests.Service(b.Namespace, name, labels, selector, ports)
	svc.Spec.IPFamilies = b.Spec.IPFamilies
	svc.Spec.IPFamilyPolicy = b.Spec.IPFamilyPolicy
	return svc
}

func deployment(b *v1alpha1.OpAMPBridge, s Settings, image, name string, labels, selector map[string]string, sa, hash string) *appsv1.Deployment {
	spec := b.Spec
	annotations := maps.Clone(spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationConfigHash] = hash
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: "/healthz", Port: intstr.FromString("healthz"),
	}}}
	args := []string{
		"--config-file=" + configDir + "/" + ConfigKey,
		"--name=" + b.Name,
	}
	if !s.ClusterWide {
		args = append(args, "--watch-namespace="+b.Namespace)
	}
	ports := []corev1.ContainerPort{{Name: "healthz", ContainerPort: healthzPort, Protocol: corev1.ProtocolTCP}}
	if spec.ServeAgents {
		args = append(args, fmt.Sprintf("--listen-addr=:%d", opampPort))
		ports = append([]corev1.ContainerPort{{Name: "opamp", ContainerPort: opampPort, Protocol: corev1.ProtocolTCP}}, ports...)
	}
	mounts := append([]corev1.VolumeMount{{Name: configVolume, MountPath: configDir}}, spec.VolumeMounts...)
	volumes := append([]corev1.Volume{{
		Name: configVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Items:                []corev1.KeyToPath{{Key: ConfigKey, Path: ConfigKey}},
		}},
	}}, spec.Volumes...)
	podSecurity, security := container.Contexts(spec.PodSecurityContext, bridgeSecurityContext(spec.SecurityContext))
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: manifests.Meta(b.Namespace, name, labels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			// Never two bridges at once, not even during a rollout: both
			// would apply every remote configuration.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels), Annotations: annotations},
				Spec: corev1.PodSpec{
					ServiceAccountName: sa,
					Containers: []corev1.Container{{
						Name:            Container,
						Image:           image,
						ImagePullPolicy: spec.ImagePullPolicy,
						Args:            args,
						Env:             env(spec.Env),
						EnvFrom:         spec.EnvFrom,
						Ports:           ports,
						Resources:       spec.Resources,
						VolumeMounts:    mounts,
						LivenessProbe:   probe,
						ReadinessProbe:  probe.DeepCopy(),
						SecurityContext: security,
					}},
					Volumes:                   volumes,
					SecurityContext:           podSecurity,
					HostNetwork:               spec.HostNetwork,
					DNSPolicy:                 manifests.DNSPolicy(nil, spec.HostNetwork, spec.PodDNSConfig),
					DNSConfig:                 spec.PodDNSConfig,
					NodeSelector:              spec.NodeSelector,
					Tolerations:               spec.Tolerations,
					Affinity:                  spec.Affinity,
					PriorityClassName:         spec.PriorityClassName,
					TopologySpreadConstraints: spec.TopologySpreadConstraints,
				},
			},
		},
	}
}

// env is the user's environment followed by what the bridge infers, each
// only when the user has not set it: the namespace, and GOMEMLIMIT and
// GOMAXPROCS from the container's limits.
func env(user []corev1.EnvVar) []corev1.EnvVar {
	return container.AppendUnset(slices.Clone(user),
		container.FieldEnv(namespaceEnv, "metadata.namespace"),
		container.LimitEnv("GOMEMLIMIT", Container, "limits.memory"),
		container.LimitEnv("GOMAXPROCS", Container, "limits.cpu"),
	)
}

// bridgeSecurityContext is the user's security context with a read-only
// root filesystem unless the user says otherwise: a property of the bridge
// image (this repository's binary writes no files), not of the policy, which
// container.Contexts then applies.
func bridgeSecurityContext(user *corev1.SecurityContext) *corev1.SecurityContext {
	sc := user.DeepCopy()
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if sc.ReadOnlyRootFilesystem == nil {
		sc.ReadOnlyRootFilesystem = ptr.To(true)
	}
	return sc
}

// Rules are what the bridge does with the API: it watches the labelled
// collectors and creates, updates and deletes them on remote configuration
// (and annotates them to restart them, which the operator turns into a
// rollout), and it watches the collectors' pods for their health. It has no
// rights on workloads: upstream's bridge patches every Deployment and
// StatefulSet it may reach to restart.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"opentelemetry.io"}, Resources: []string{"opentelemetrycollectors"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
	}
}

func namespacedRBAC(b *v1alpha1.OpAMPBridge, name string, labels map[string]string) []client.Object {
	ns := b.Namespace
	return []client.Object{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: manifests.Meta(ns, name, labels),
			Rules:      Rules(),
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: manifests.Meta(ns, name, labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		},
	}
}

func clusterRBAC(b *v1alpha1.OpAMPBridge, saName string) []client.Object {
	name := ClusterRoleName(b.Namespace, b.Name)
	labels := manifests.Labels(b.Namespace, b.Name, Component, Name(b.Name))
	// The bridge cannot own them: the operator finds their bridge by this
	// annotation when they change.
	owner := map[string]string{manifests.AnnotationOwner: b.Namespace + "/" + b.Name}
	return []client.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: owner},
			Rules:      Rules(),
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels), Annotations: maps.Clone(owner)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: b.Namespace}},
		},
	}
}
