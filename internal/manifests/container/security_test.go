package container_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

var (
	runtimeDefault = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	dropAll        = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
)

// TestSecurityContext: the restricted defaults fill what the user left
// unset, and never a value the API server or the kubelet refuses with what
// the user set. The old bridge policy gave allowPrivilegeEscalation: false
// to a privileged container (refused by the API server) and runAsNonRoot:
// true to one running as user 0 (refused by the kubelet).
func TestSecurityContext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		user *corev1.SecurityContext
		pod  *corev1.PodSecurityContext
		want *corev1.SecurityContext
	}{
		{"none", nil, nil, &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), Capabilities: dropAll, SeccompProfile: runtimeDefault,
		}},
		{"user's kept, the rest filled", &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), ReadOnlyRootFilesystem: ptr.To(true)}, nil, &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](1000), ReadOnlyRootFilesystem: ptr.To(true),
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), Capabilities: dropAll, SeccompProfile: runtimeDefault,
		}},
		{"privileged: no allowPrivilegeEscalation false, no drop", &corev1.SecurityContext{Privileged: ptr.To(true)}, nil, &corev1.SecurityContext{
			Privileged: ptr.To(true), RunAsNonRoot: ptr.To(true), SeccompProfile: runtimeDefault,
		}},
		{"CAP_SYS_ADMIN: no allowPrivilegeEscalation false", &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}, nil, &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}, RunAsNonRoot: ptr.To(true), SeccompProfile: runtimeDefault,
		}},
		{"user 0: no runAsNonRoot", &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}, nil, &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](0), AllowPrivilegeEscalation: ptr.To(false), Capabilities: dropAll, SeccompProfile: runtimeDefault,
		}},
		{"pod's user 0: no runAsNonRoot", nil, &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), Capabilities: dropAll, SeccompProfile: runtimeDefault,
		}},
		{"pod's seccomp profile kept", nil, &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}}, &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), Capabilities: dropAll,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")},
		}},
		{"explicit values kept", &corev1.SecurityContext{RunAsNonRoot: ptr.To(false), AllowPrivilegeEscalation: ptr.To(true)}, nil, &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(false), AllowPrivilegeEscalation: ptr.To(true), Capabilities: dropAll, SeccompProfile: runtimeDefault,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, container.SecurityContext(tc.user, tc.pod))
		})
	}
}

// TestPodSecurityContext: a collector container running as user 0 keeps the
// pod from runAsNonRoot, which it would inherit and the kubelet refuse (the
// old collector policy set it on the pod whatever the container said).
func TestPodSecurityContext(t *testing.T) {
	t.Parallel()
	restricted := &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: runtimeDefault}
	require.Equal(t, restricted, container.PodSecurityContext(nil, nil))
	require.Equal(t, &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true), SeccompProfile: runtimeDefault},
		container.PodSecurityContext(&corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)}, nil))
	require.Equal(t, &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), SeccompProfile: runtimeDefault},
		container.PodSecurityContext(&corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}, nil))

	root := &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	pod, ctr := container.Contexts(nil, root)
	require.Equal(t, &corev1.PodSecurityContext{SeccompProfile: runtimeDefault}, pod)
	require.Nil(t, ctr.RunAsNonRoot)
	require.Nil(t, pod.RunAsNonRoot)
}

// TestTune keeps the probe's own values where the user sets nothing (the old
// workload copy zeroed them).
func TestTune(t *testing.T) {
	t.Parallel()
	health := &corev1.Probe{TimeoutSeconds: 3, PeriodSeconds: 20, FailureThreshold: 4}
	got := container.Tune(health, nil)
	require.Equal(t, health, got)
	require.NotSame(t, health, got)
	got = container.Tune(health, &v1beta1.Probe{PeriodSeconds: ptr.To[int32](5)})
	require.Equal(t, &corev1.Probe{TimeoutSeconds: 3, PeriodSeconds: 5, FailureThreshold: 4}, got)
	require.Nil(t, container.Tune(nil, nil))
}
