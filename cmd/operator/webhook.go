package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/shardwise/shardwise/internal/instrumentation"
	webhookpkg "github.com/shardwise/shardwise/internal/webhook"
)

// webhookOptions are the admission webhook's and auto-instrumentation's flags.
type webhookOptions struct {
	enabled bool
	host    string
	port    int
	certDir string
	// images are the default agent images per language.
	images map[instrumentation.Language]*string
	// enabledLanguages are the --enable-<language>-instrumentation flags.
	enabledLanguages map[instrumentation.Language]*bool
	multi            bool
	// sidecar is --enable-sidecar-injection.
	sidecar bool
	// certManagement is cert-manager, self or none.
	certManagement string
	selfTLS        webhookpkg.SelfManagedTLS
	// conversionCA is --webhook-conversion-ca: with a self-managed
	// certificate, also keep the collector CRD's conversion caBundle.
	conversionCA bool
	// crossNamespace is --allow-cross-namespace-references.
	crossNamespace webhookpkg.CrossNamespace
}

// defaultCertDir is controller-runtime's default serving certificate directory.
var defaultCertDir = filepath.Join("/tmp", "k8s-webhook-server", "serving-certs")

func (w *webhookOptions) addFlags(fs *flag.FlagSet) {
	defaults := instrumentation.DefaultSettings()
	fs.BoolVar(&w.enabled, "enable-webhooks", true, "Serve the admission webhooks (pod auto-instrumentation); false runs the reconcilers alone.")
	fs.IntVar(&w.port, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&w.host, "webhook-host", "", "Address the webhook server listens on; empty for every address (in a pod, the API server calls the pod's IP).")
	fs.StringVar(&w.certDir, "webhook-cert-dir", defaultCertDir, "Directory holding the webhook server's tls.crt and tls.key.")
	fs.StringVar(&w.certManagement, "webhook-cert-management", "cert-manager", "Who provides the webhook's serving certificate in --webhook-cert-dir: cert-manager (config/default), self (the operator generates, rotates and injects it, config/self-managed-tls) or none (you do).")
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "shardwise-system"
	}
	fs.StringVar(&w.selfTLS.Secret.Namespace, "webhook-namespace", ns, "Namespace of the webhook Service and certificate Secret (self-managed certificate); default $POD_NAMESPACE.")
	fs.StringVar(&w.selfTLS.Secret.Name, "webhook-secret-name", "shardwise-webhook-server-cert", "Secret holding the self-managed certificate, mounted at --webhook-cert-dir.")
	fs.StringVar(&w.selfTLS.Service, "webhook-service-name", "shardwise-webhook-service", "Webhook Service the self-managed certificate is issued for.")
	fs.StringVar(&w.selfTLS.MutatingWebhookConfiguration, "webhook-configuration-name", "shardwise-mutating-webhook-configuration", "MutatingWebhookConfiguration whose caBundle the operator keeps (self-managed certificate).")
	fs.BoolVar(&w.conversionCA, "webhook-conversion-ca", true, "With --webhook-cert-management=self, also inject the CA into the OpenTelemetryCollector CRD's conversion webhook (false when whoever installs the CRD provides its CA, as the Helm chart does with crds.install=false).")
	fs.BoolVar(&w.multi, "enable-multi-instrumentation", true, "Allow several languages in one pod, with <language>-container-names annotations.")
	fs.BoolVar(&w.crossNamespace.AllowAll, "allow-cross-namespace-references", false, "Let pods name another namespace's collector or Instrumentation (<namespace>/<name> in an injection annotation) that does not list the pod's namespace in its "+webhookpkg.AllowNamespacesAnnotation+" annotation, as the upstream operator does; off, such a pod is admitted unchanged, with a Warning event.")
	fs.BoolVar(&w.sidecar, "enable-sidecar-injection", true, "Inject the collector sidecar (mode: sidecar) into pods annotated sidecar.opentelemetry.io/inject.")
	w.images = map[instrumentation.Language]*string{}
	w.enabledLanguages = map[instrumentation.Language]*bool{}
	for _, l := range instrumentation.Languages {
		if l == instrumentation.SDK {
			continue
		}
		w.images[l] = fs.String("auto-instrumentation-"+string(l)+"-image", defaults.Images[l], fmt.Sprintf("Default %s auto-instrumentation image, for Instrumentations that name none.", l))
		help := fmt.Sprintf("Inject %s auto-instrumentation.", l)
		if l == instrumentation.Go {
			help += " Off by default: the Go agent runs as a privileged sidecar."
		}
		w.enabledLanguages[l] = fs.Bool("enable-"+string(l)+"-instrumentation", defaults.Enabled[l], help)
	}
}

// settings are the mutator's settings from the flags.
func (w *webhookOptions) settings() instrumentation.Settings {
	s := instrumentation.Settings{Images: map[instrumentation.Language]string{}, Enabled: map[instrumentation.Language]bool{instrumentation.SDK: true}, MultiInstrumentation: w.multi}
	for l, v := range w.images {
		s.Images[l] = *v
	}
	for l, v := range w.enabledLanguages {
		s.Enabled[l] = *v
	}
	return s
}

func (w *webhookOptions) validate() error {
	switch w.certManagement {
	case "cert-manager", "self", "none":
	default:
		return fmt.Errorf("--webhook-cert-management=%q: want cert-manager, self or none", w.certManagement)
	}
	if w.port <= 0 || w.port > 65535 {
		return fmt.Errorf("--webhook-port %d is not a port", w.port)
	}
	for l, img := range w.images {
		if strings.TrimSpace(*img) == "" {
			return fmt.Errorf("--auto-instrumentation-%s-image must not be empty", l)
		}
	}
	return nil
}

// server is the webhook server for the manager's options.
func (w *webhookOptions) server(tlsOpts []func(*tls.Config)) webhook.Server {
	return webhook.NewServer(webhook.Options{Host: w.host, Port: w.port, CertDir: w.certDir, TLSOpts: tlsOpts})
}

// setupWebhooks registers the pod webhook, unless webhooks are disabled.
// collectorImage is the sidecar's image for collectors that name none.
func setupWebhooks(mgr manager.Manager, w webhookOptions, collectorImage string) error {
	if !w.enabled {
		mgr.GetLogger().Info("webhooks disabled (--enable-webhooks=false): pods are not auto-instrumented and get no collector sidecar")
		return nil
	}
	var before []webhookpkg.PodMutator
	if w.sidecar {
		sm, err := webhookpkg.NewSidecarMutator(mgr.GetConfig(), mgr.GetClient(), mgr.GetAPIReader(), collectorImage, metrics.Registry)
		if err != nil {
			return err
		}
		sm.CrossNamespace = w.crossNamespace
		mgr.GetLogger().Info("collector sidecar injection enabled", "nativeSidecar", sm.Settings.NativeSidecar)
		before = append(before, sm)
	}
	var gate <-chan struct{}
	if w.certManagement == "self" {
		tls := w.selfTLS
		tls.CertDir = w.certDir
		if w.conversionCA {
			tls.ConversionCRD = webhookpkg.CollectorCRD
		}
		var err error
		if gate, err = webhookpkg.AddCertRotator(mgr, tls); err != nil {
			return err
		}
	}
	return webhookpkg.Setup(mgr, w.settings(), w.crossNamespace, metrics.Registry, w.certDir, gate, before...)
}
