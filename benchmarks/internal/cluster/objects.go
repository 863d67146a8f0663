package cluster

import (
	"fmt"
	"strconv"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Objects of a workload, shaped as a Deployment's are in a real cluster:
// the labels a Helm chart sets, a few annotations, two containers with
// probes, resources and environment, an owner reference to the ReplicaSet,
// a node, and (through the status subresource) a Running, Ready status.

// labels are the workload's pod labels; selector picks its pods.
func (w *Workload) labels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       w.Name,
		"app.kubernetes.io/instance":   w.Name + "-prod",
		"app.kubernetes.io/component":  "backend",
		"app.kubernetes.io/part-of":    w.Namespace,
		"app.kubernetes.io/version":    "1." + strconv.Itoa(w.Generation) + ".0",
		"app.kubernetes.io/managed-by": "Helm",
		"helm.sh/chart":                w.Name + "-4.2.0",
		"pod-template-hash":            w.templateHash(),
	}
}

func (w *Workload) selector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": w.Name, "app.kubernetes.io/instance": w.Name + "-prod"}
}

// Pod returns the pod p of w, as created (no status).
func (w *Workload) Pod(p Pod) *corev1.Pod {
	hash := w.templateHash()
	cpu, mem := resource.MustParse("250m"), resource.MustParse("256Mi")
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http")}},
			PeriodSeconds:    10,
			TimeoutSeconds:   1,
			FailureThreshold: 3,
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      p.Name,
			Namespace: w.Namespace,
			Labels:    w.labels(),
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt":              "2026-11-30T08:00:00Z",
				"checksum/config":                                "5f0c4e6ad2b1c0e1d89a7f3b24e96e0a1c9d0f3a7e8b6c5d4e3f2a1b0c9d8e7f",
				"kubectl.kubernetes.io/default-container":        "app",
				"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: w.Name + "-" + hash,
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012x", len(w.Name)+w.Generation)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:           p.Node,
			ServiceAccountName: "default",
			Containers: []corev1.Container{
				{
					Name:  "app",
					Image: "registry.example.com/" + w.Namespace + "/" + w.Name + ":1." + strconv.Itoa(w.Generation) + ".0",
					Args:  []string{"--config=/etc/app/config.yaml", "--log-format=json"},
					Ports: []corev1.ContainerPort{
						{Name: "http", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP},
						{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
					},
					Env: []corev1.EnvVar{
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
						{Name: "GOMAXPROCS", Value: "1"},
						{Name: "OTEL_SERVICE_NAME", Value: w.Name},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: mem},
					},
					VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
					ReadinessProbe: probe("/ready"),
					LivenessProbe:  probe("/healthz"),
				},
				{
					Name:      "log-shipper",
					Image:     "registry.example.com/platform/log-shipper:3.1.4",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
				},
			},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.Name + "-config"}}}}},
		},
	}
}

// RunningStatus is a scheduled, running, ready pod's status at ip on node.
func RunningStatus(ip, node string, containers ...string) corev1.PodStatus {
	now := metav1.Now()
	st := corev1.PodStatus{
		Phase:  corev1.PodRunning,
		PodIP:  ip,
		PodIPs: []corev1.PodIP{{IP: ip}},
		HostIP: "192.168.0." + strconv.Itoa(len(node)%250+1),
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		StartTime: &now,
	}
	for _, c := range containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c, Ready: true, Started: ptr.To(true),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			Image:       "registry.example.com/" + c,
			ImageID:     "registry.example.com/" + c + "@sha256:3b4f1c5d0e2a7b9c8d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c",
			ContainerID: "containerd://" + fmt.Sprintf("%064x", len(c)),
		})
	}
	return st
}

// Service returns the workload's Service.
func (w *Workload) Service() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: w.selector()},
		Spec: corev1.ServiceSpec{
			Selector: w.selector(),
			Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
				{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// EndpointSlices returns the workload's EndpointSlices: its pods in order,
// EndpointsPerSlice to a slice, named <service>-<i>.
func (w *Workload) EndpointSlices() []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for i := 0; i < len(w.Pods); i += EndpointsPerSlice {
		pods := w.Pods[i:min(i+EndpointsPerSlice, len(w.Pods))]
		es := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:      w.Name + "-" + suffix(uint64(i/EndpointsPerSlice)),
				Namespace: w.Namespace,
				Labels: map[string]string{
					discoveryv1.LabelServiceName: w.Name,
					discoveryv1.LabelManagedBy:   "endpointslice-controller.k8s.io",
					"app.kubernetes.io/name":     w.Name,
				},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{
				{Name: ptr.To("http"), Port: ptr.To[int32](HTTPPort), Protocol: ptr.To(corev1.ProtocolTCP)},
				{Name: ptr.To("metrics"), Port: ptr.To[int32](MetricsPort), Protocol: ptr.To(corev1.ProtocolTCP)},
			},
		}
		for _, p := range pods {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
				Addresses:  []string{p.IP},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
				NodeName:   ptr.To(p.Node),
				Zone:       ptr.To("zone-" + strconv.Itoa(len(p.Node)%3)),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: w.Namespace, Name: p.Name, UID: types.UID(p.UID)},
			})
		}
		out = append(out, es)
	}
	return out
}

// ServiceMonitor returns the workload's ServiceMonitor: its Service's
// metrics port every 30 s, labelled for its allocator.
func (w *Workload) ServiceMonitor() *monitoringv1.ServiceMonitor {
	return &monitoringv1.ServiceMonitor{
		TypeMeta: metav1.TypeMeta{APIVersion: "monitoring.coreos.com/v1", Kind: "ServiceMonitor"},
		ObjectMeta: metav1.ObjectMeta{
			Name: w.Name, Namespace: w.Namespace,
			Labels: map[string]string{AllocatorLabel: w.Allocator, "release": "prometheus"},
		},
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:  metav1.LabelSelector{MatchLabels: w.selector()},
			Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Interval: "30s", Path: "/metrics"}},
		},
	}
}

// CollectorPod returns a collector pod of allocator a, as created.
func (a *AllocatorLayout) CollectorPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: a.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/component":  "opentelemetry-collector",
				"app.kubernetes.io/managed-by": "opentelemetry-operator",
				AllocatorLabel:                 a.Name,
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "otc-container", Image: "otel/opentelemetry-collector-contrib:0.165.0",
			Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
		}}},
	}
}
