package webhook

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPatch applies the response's patch to the original JSON and checks it
// yields the mutated pod, for the whole-field fast path and the JSON-diff
// fallback.
func TestPatch(t *testing.T) {
	t.Parallel()
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "app", Image: "app:1"}},
			},
		}
	}
	for _, tc := range []struct {
		name      string
		mutate    func(p *corev1.Pod)
		wantOps   int
		wantNoOps bool
	}{
		{name: "unchanged", mutate: func(*corev1.Pod) {}, wantNoOps: true},
		{name: "annotation and containers", mutate: func(p *corev1.Pod) {
			p.Annotations = map[string]string{"k": "v"}
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "A", Value: "1"})
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "side", Image: "s"})
		}, wantOps: 2},
		{name: "init containers removed, volumes and shareProcessNamespace added", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = nil
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.ShareProcessNamespace = ptr(true)
		}, wantOps: 3},
		{name: "label and native sidecar added", mutate: func(p *corev1.Pod) {
			p.Labels["sidecar.opentelemetry.io/injected"] = "ns.agent"
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "otc-container", Image: "c", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)})
		}, wantOps: 2},
		{name: "labels removed", mutate: func(p *corev1.Pod) { p.Labels = nil }, wantOps: 1},
		{name: "another field falls back to the diff", mutate: func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"zone": "a"}
			p.Spec.Containers[0].Image = "app:2"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			original := base()
			raw, err := json.Marshal(original)
			require.NoError(t, err)
			mutated := original.DeepCopy()
			tc.mutate(mutated)
			resp := patch(raw, original, mutated)
			require.True(t, resp.Allowed)
			if tc.wantNoOps {
				require.Empty(t, resp.Patches)
				return
			}
			if tc.wantOps > 0 {
				require.Len(t, resp.Patches, tc.wantOps)
			}
			ops, err := json.Marshal(resp.Patches)
			require.NoError(t, err)
			p, err := jsonpatch.DecodePatch(ops)
			require.NoError(t, err)
			patched, err := p.Apply(raw)
			require.NoError(t, err)
			var got corev1.Pod
			require.NoError(t, json.Unmarshal(patched, &got))
			require.Equal(t, mutated, &got)
		})
	}
}
