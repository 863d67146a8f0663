package webhook

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shardwise/shardwise/internal/instrumentation"
)

// Setup registers the pod webhook on mgr's webhook server, its metrics with
// reg, and the readiness checks that keep the operator unready until the
// server serves TLS with a loadable certificate from certDir. Further pod
// mutators (the collector sidecar) go before the instrumentation one.
func Setup(mgr manager.Manager, s instrumentation.Settings, reg prometheus.Registerer, certDir string, before ...PodMutator) error {
	m, err := NewMetrics(reg)
	if err != nil {
		return err
	}
	inst := &InstrumentationMutator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Settings: s, Metrics: m}
	handler := NewPodHandler(mgr.GetScheme(), mgr.GetClient(), mgr.GetEventRecorder("shardwise-pod-webhook"), append(before, inst)...)
	srv := mgr.GetWebhookServer()
	srv.Register(PodPath, &admission.Webhook{Handler: handler})
	if err := mgr.AddReadyzCheck("webhook-certificate", CertChecker(certDir, "", "", nil)); err != nil {
		return fmt.Errorf("add webhook certificate check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-server", srv.StartedChecker()); err != nil {
		return fmt.Errorf("add webhook server check: %w", err)
	}
	return nil
}
