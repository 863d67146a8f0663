package container

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SecurityContext is the one policy for every container the operator runs
// for a tenant (the collector in every mode, the target allocator, the OpAMP
// bridge): the user's security context with the unset fields of the
// restricted Pod Security Standard filled in, but never a default that
// contradicts what the user or the pod set, which the API server or the
// kubelet would refuse:
//   - allowPrivilegeEscalation: false, unless the container is privileged or
//     adds CAP_SYS_ADMIN (the API server refuses both combinations);
//   - capabilities: drop ALL, unless the user set capabilities or the
//     container is privileged (which has them all anyway);
//   - runAsNonRoot: true, unless the container or, failing that, the pod
//     runs as user 0 (the kubelet refuses to start such a container);
//   - seccompProfile: the pod's, else RuntimeDefault.
//
// pod is the security context of the pod the container runs in (the one
// PodSecurityContext built, or an application pod's for a sidecar); nil is
// none.
func SecurityContext(user *corev1.SecurityContext, pod *corev1.PodSecurityContext) *corev1.SecurityContext {
	sc := user.DeepCopy()
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	privileged := ptr.Deref(sc.Privileged, false)
	if sc.AllowPrivilegeEscalation == nil && !privileged && !addsSysAdmin(sc.Capabilities) {
		sc.AllowPrivilegeEscalation = ptr.To(false)
	}
	if sc.Capabilities == nil && !privileged {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	}
	uid := sc.RunAsUser
	if uid == nil && pod != nil {
		uid = pod.RunAsUser
	}
	if sc.RunAsNonRoot == nil && ptr.Deref(uid, -1) != 0 {
		sc.RunAsNonRoot = ptr.To(true)
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		if pod != nil && pod.SeccompProfile != nil {
			sc.SeccompProfile = pod.SeccompProfile.DeepCopy()
		}
	}
	return sc
}

// PodSecurityContext is the same policy at the pod level: the user's pod
// security context with runAsNonRoot: true and the RuntimeDefault seccomp
// profile where unset, but no runAsNonRoot when the pod or its main
// container (container, the user's security context of it) runs as user 0
// without saying runAsNonRoot itself: the container would inherit a
// runAsNonRoot the kubelet refuses with that user.
func PodSecurityContext(user *corev1.PodSecurityContext, container *corev1.SecurityContext) *corev1.PodSecurityContext {
	sc := user.DeepCopy()
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	rootContainer := container != nil && container.RunAsNonRoot == nil && ptr.Deref(container.RunAsUser, -1) == 0
	if sc.RunAsNonRoot == nil && ptr.Deref(sc.RunAsUser, -1) != 0 && !rootContainer {
		sc.RunAsNonRoot = ptr.To(true)
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return sc
}

// addsSysAdmin reports whether caps adds CAP_SYS_ADMIN, which the API server
// refuses together with allowPrivilegeEscalation: false.
func addsSysAdmin(caps *corev1.Capabilities) bool {
	return caps != nil && slices.ContainsFunc(caps.Add, func(c corev1.Capability) bool {
		return c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN"
	})
}

// Contexts are the pod's security context and its main container's, built
// together by the policy: the container's defaults follow the pod's.
func Contexts(pod *corev1.PodSecurityContext, main *corev1.SecurityContext) (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	p := PodSecurityContext(pod, main)
	return p, SecurityContext(main, p)
}
