package manifests_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/manifests/container"
	"github.com/shardwise/shardwise/internal/sidecar"
)

// receiverCollector is a collector whose one traces pipeline uses receiver
// id (every protocol of its type enabled), with the health_check extension
// and the user's probe settings.
func receiverCollector(id string, mode v1beta1.Mode) *v1beta1.OpenTelemetryCollector {
	rc := map[string]any{}
	protocols := map[string]any{}
	for _, p := range container.Protocols(receiverType(id)) {
		protocols[p] = map[string]any{}
	}
	if len(protocols) > 0 {
		rc["protocols"] = protocols
	}
	return &v1beta1.OpenTelemetryCollector{
		ObjectMeta: metav1.ObjectMeta{Namespace: "observability", Name: "agree"},
		Spec: v1beta1.OpenTelemetryCollectorSpec{
			Mode:           mode,
			LivenessProbe:  &v1beta1.Probe{PeriodSeconds: ptr.To[int32](7)},
			ReadinessProbe: &v1beta1.Probe{FailureThreshold: ptr.To[int32](5)},
			StartupProbe:   &v1beta1.Probe{FailureThreshold: ptr.To[int32](30)},
			Config: v1beta1.Config{
				Receivers:  v1beta1.AnyConfig{Object: map[string]any{id: rc}},
				Exporters:  v1beta1.AnyConfig{Object: map[string]any{"debug": map[string]any{}}},
				Extensions: &v1beta1.AnyConfig{Object: map[string]any{"health_check": map[string]any{}}},
				Service: v1beta1.Service{
					Extensions: []string{"health_check"},
					Pipelines:  map[string]*v1beta1.Pipeline{"traces": {Receivers: []string{id}, Exporters: []string{"debug"}}},
				},
			},
		},
	}
}

func receiverType(id string) string {
	typ, _, _ := strings.Cut(id, "/")
	return typ
}

// TestModesAgreeOnEveryReceiver: for every receiver with default ports (and
// a scraper and an unknown type), as <type> and <type>/custom, the
// deployment's collector container and the injected sidecar have the same
// ports, probes and security context, and every listening receiver has a
// port.
func TestModesAgreeOnEveryReceiver(t *testing.T) {
	t.Parallel()
	types := append(container.ListeningReceivers(), "prometheus", "unknownreceiver")
	for _, typ := range types {
		for _, id := range []string{typ, typ + "/custom"} {
			t.Run(id, func(t *testing.T) {
				t.Parallel()
				built, err := manifests.BuildCollector(receiverCollector(id, v1beta1.ModeDeployment), settings, nil)
				require.NoError(t, err)
				var workload corev1.Container
				for _, o := range built.Objects {
					if d, ok := o.(*appsv1.Deployment); ok {
						workload = d.Spec.Template.Spec.Containers[0]
					}
				}
				require.Equal(t, container.Name, workload.Name)
				side, err := sidecar.Container(receiverCollector(id, v1beta1.ModeSidecar), "app", nil, nil, sidecar.Settings{Image: settings.CollectorImage})
				require.NoError(t, err)

				require.Equal(t, workload.Ports, side.Ports)
				require.Equal(t, workload.LivenessProbe, side.LivenessProbe)
				require.Equal(t, workload.ReadinessProbe, side.ReadinessProbe)
				require.Equal(t, workload.StartupProbe, side.StartupProbe)
				require.Equal(t, workload.SecurityContext, side.SecurityContext)
				require.Equal(t, int32(7), workload.LivenessProbe.PeriodSeconds)
				require.Equal(t, int32(5), workload.ReadinessProbe.FailureThreshold)

				listening := slices.Contains(container.ListeningReceivers(), typ)
				// metrics and health-check, plus the receiver's own.
				if listening {
					require.Greater(t, len(workload.Ports), 2, "ports of %s", id)
				} else {
					require.Len(t, workload.Ports, 2, "ports of %s", id)
				}
			})
		}
	}
}
