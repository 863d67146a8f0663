package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// PodPath is where the pod mutating webhook is served.
const PodPath = "/mutate-v1-pod"

// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,groups="",resources=pods,verbs=create,versions=v1,name=mpod.kb.io,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=10,reinvocationPolicy=Never

// Finding is something a mutator could not do, for the pod's owner events
// and the admission warnings.
type Finding struct {
	// Reason is the event's machine-readable reason (CamelCase).
	Reason string
	// Message names the annotation and the cause.
	Message string
}

// PodMutator is one step of the pod admission chain.
type PodMutator interface {
	// Name identifies the mutator in events and logs.
	Name() string
	// Mutate changes pod in place. ns is the pod's namespace (name and
	// annotations; annotations are empty if the namespace could not be
	// read). Findings report what it could not do; an error means it could
	// not run, and the chain discards its changes but keeps the others'.
	Mutate(ctx context.Context, ns *corev1.Namespace, pod *corev1.Pod) ([]Finding, error)
}

// PodHandler runs the mutators in order on pods being created.
type PodHandler struct {
	// Reader reads namespaces, normally the manager's cache.
	Reader client.Reader
	// Recorder records the Warning events.
	Recorder events.EventRecorder
	// Mutators run in order: the collector sidecar first, then
	// instrumentation, as upstream.
	Mutators []PodMutator
	// Decoder decodes the pod.
	Decoder admission.Decoder
}

// NewPodHandler returns a handler for the scheme's types.
func NewPodHandler(scheme *runtime.Scheme, reader client.Reader, rec events.EventRecorder, mutators ...PodMutator) *PodHandler {
	return &PodHandler{Reader: reader, Recorder: rec, Mutators: mutators, Decoder: admission.NewDecoder(scheme)}
}

var _ admission.Handler = (*PodHandler)(nil)

// Handle implements admission.Handler. It never refuses a pod: whatever goes
// wrong is reported and the pod is admitted with the changes that worked.
func (h *PodHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("only pod creation is mutated")
	}
	pod := &corev1.Pod{}
	if err := h.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decode pod: %w", err))
	}
	log := logf.FromContext(ctx).WithValues("namespace", req.Namespace, "pod", podName(pod))

	var warnings []string
	report := func(f Finding) {
		warnings = append(warnings, f.Message)
		log.Info("pod mutation incomplete", "reason", f.Reason, "message", f.Message)
		if h.Recorder != nil {
			h.Recorder.Eventf(eventTarget(req.Namespace, pod), nil, corev1.EventTypeWarning, f.Reason, "MutatePod", "pod %s: %s", podName(pod), f.Message)
		}
	}

	ns := &corev1.Namespace{}
	if err := h.Reader.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns); err != nil {
		ns = &corev1.Namespace{}
		ns.Name = req.Namespace
		if !apierrors.IsNotFound(err) {
			report(Finding{Reason: "NamespaceUnreadable", Message: fmt.Sprintf("namespace %s could not be read, its annotations are ignored: %v", req.Namespace, err)})
		}
	}

	for _, m := range h.Mutators {
		next := pod.DeepCopy()
		findings, err := m.Mutate(ctx, ns, next)
		for _, f := range findings {
			report(f)
		}
		if err != nil {
			report(Finding{Reason: "PodMutationFailed", Message: fmt.Sprintf("%s: %v; its changes were dropped, the others kept", m.Name(), err)})
			continue
		}
		pod = next
	}

	raw, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode pod: %w", err))
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, raw)
	resp.Warnings = warnings
	return resp
}

func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "<generated>"
}

// eventTarget is the pod's controller (or first owner), else its namespace:
// the pod does not exist yet when the webhook runs.
func eventTarget(namespace string, pod *corev1.Pod) *corev1.ObjectReference {
	refs := pod.OwnerReferences
	for i, r := range refs {
		if r.Controller != nil && *r.Controller {
			refs = refs[i : i+1]
			break
		}
	}
	if len(refs) > 0 {
		r := refs[0]
		return &corev1.ObjectReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, Namespace: namespace, UID: r.UID}
	}
	// Namespace set so the event lands where kubectl get events -n finds it.
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: namespace, Namespace: namespace}
}
