package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	"github.com/shardwise/shardwise/internal/instrumentation"
)

// ConvertPath is where the CRD conversion webhook is served: it converts
// OpenTelemetryCollector between v1alpha1 and v1beta1 through the hub
// (apis/v1alpha1.ToV1beta1), for every Convertible type in mgr's scheme.
const ConvertPath = "/convert"

// Setup registers the pod webhook and the conversion webhook on mgr's webhook server, its metrics with
// reg, and the readiness checks that keep the operator unready until the
// server serves TLS with a loadable certificate from certDir. Further pod
// mutators (the collector sidecar) go before the instrumentation one.
//
// With a non-nil gate (the self-managed certificate's readiness, see
// AddCertRotator) the webhook server starts only once gate is closed, since
// it cannot start without a certificate; until then the operator is unready.
func Setup(mgr manager.Manager, s instrumentation.Settings, cross CrossNamespace, reg prometheus.Registerer, certDir string, gate <-chan struct{}, before ...PodMutator) error {
	m, err := NewMetrics(reg)
	if err != nil {
		return err
	}
	inst := &InstrumentationMutator{Reader: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Settings: s, Metrics: m, CrossNamespace: cross}
	handler := NewPodHandler(mgr.GetScheme(), mgr.GetClient(), mgr.GetEventRecorder("shardwise-pod-webhook"), append(before, inst)...)

	var started atomic.Pointer[healthz.Checker]
	register := func() {
		srv := mgr.GetWebhookServer()
		srv.Register(PodPath, &admission.Webhook{Handler: handler})
		srv.Register(ConvertPath, conversion.NewWebhookHandler(mgr.GetScheme(), conversion.NewRegistry()))
		check := srv.StartedChecker()
		started.Store(&check)
	}
	if err := mgr.AddReadyzCheck("webhook-certificate", CertChecker(certDir, "", "", nil)); err != nil {
		return fmt.Errorf("add webhook certificate check: %w", err)
	}
	if err := mgr.AddReadyzCheck("webhook-server", func(req *http.Request) error {
		check := started.Load()
		if check == nil {
			return errors.New("webhook server waits for its self-managed certificate")
		}
		return (*check)(req)
	}); err != nil {
		return fmt.Errorf("add webhook server check: %w", err)
	}
	if gate == nil {
		register()
		return nil
	}
	return mgr.Add(everyReplica(func(ctx context.Context) error {
		select {
		case <-gate:
			register()
		case <-ctx.Done():
		}
		return nil
	}))
}

// everyReplica is a runnable that runs without leader election: every
// replica serves the webhook.
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }
