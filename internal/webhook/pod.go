package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// +kubebuilder:webhook:path=/mutate-v1-pod,mutating=true,failurePolicy=ignore,groups="",resources=pods,verbs=create,versions=v1,name=mpod.kb.io,sideEffects=None,admissionReviewVersions=v1,timeoutSeconds=5,reinvocationPolicy=Never

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
	// read); it is the cache's object and must not be changed. Findings report what it could not do; an error means it could
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
	var warnings []string
	// A dry run (kubectl apply --dry-run=server) changes nothing, so it
	// leaves no events either; it still gets the warnings.
	dryRun := req.DryRun != nil && *req.DryRun
	report := func(f Finding) {
		warnings = append(warnings, f.Message)
		logf.FromContext(ctx).Info("pod mutation incomplete", "namespace", req.Namespace, "pod", podName(pod), "reason", f.Reason, "message", f.Message, "dryRun", dryRun)
		if h.Recorder != nil && !dryRun {
			h.Recorder.Eventf(eventTarget(req.Namespace, pod), relatedPod(req.Namespace, pod), corev1.EventTypeWarning, f.Reason, "MutatePod", "pod %s: %s", podName(pod), f.Message)
		}
	}

	ns := &corev1.Namespace{}
	if err := h.Reader.Get(ctx, types.NamespacedName{Name: req.Namespace}, ns, client.UnsafeDisableDeepCopy); err != nil {
		ns = &corev1.Namespace{}
		ns.Name = req.Namespace
		if !apierrors.IsNotFound(err) {
			report(Finding{Reason: "NamespaceUnreadable", Message: fmt.Sprintf("namespace %s could not be read, its annotations are ignored: %v", req.Namespace, err)})
		}
	}

	original := pod.DeepCopy()
	for _, m := range h.Mutators {
		next := pod.DeepCopy()
		findings, err := mutateSafely(ctx, m, ns, next)
		for _, f := range findings {
			report(f)
		}
		if err != nil {
			report(Finding{Reason: "PodMutationFailed", Message: fmt.Sprintf("%s: %v; its changes were dropped, the others kept", m.Name(), err)})
			continue
		}
		pod = next
	}

	resp := patch(req.Object.Raw, original, pod)
	resp.Warnings = warnings
	return resp
}

// patch is the admission response turning original into pod. Mutators
// change only a few top-level fields of a pod; replacing each changed one
// whole is several times cheaper than diffing the two JSON documents, which
// stays the fallback for any other change. An unchanged pod (most pods: no
// annotation) gets no patch at all.
func patch(raw []byte, original, pod *corev1.Pod) admission.Response {
	if equality.Semantic.DeepEqual(original, pod) {
		return admission.Allowed("")
	}
	type field struct {
		path     string
		old, new any
		empty    bool
		restore  func(p *corev1.Pod)
	}
	fields := []field{
		{"/metadata/annotations", original.Annotations, pod.Annotations, len(pod.Annotations) == 0, func(p *corev1.Pod) { p.Annotations = original.Annotations }},
		{"/metadata/labels", original.Labels, pod.Labels, len(pod.Labels) == 0, func(p *corev1.Pod) { p.Labels = original.Labels }},
		{"/spec/initContainers", original.Spec.InitContainers, pod.Spec.InitContainers, len(pod.Spec.InitContainers) == 0, func(p *corev1.Pod) { p.Spec.InitContainers = original.Spec.InitContainers }},
		{"/spec/containers", original.Spec.Containers, pod.Spec.Containers, false, func(p *corev1.Pod) { p.Spec.Containers = original.Spec.Containers }},
		{"/spec/volumes", original.Spec.Volumes, pod.Spec.Volumes, len(pod.Spec.Volumes) == 0, func(p *corev1.Pod) { p.Spec.Volumes = original.Spec.Volumes }},
		{"/spec/shareProcessNamespace", original.Spec.ShareProcessNamespace, pod.Spec.ShareProcessNamespace, pod.Spec.ShareProcessNamespace == nil, func(p *corev1.Pod) { p.Spec.ShareProcessNamespace = original.Spec.ShareProcessNamespace }},
	}
	rest := *pod
	for _, f := range fields {
		f.restore(&rest)
	}
	if !equality.Semantic.DeepEqual(original, &rest) {
		out, err := json.Marshal(pod)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encode pod: %w", err))
		}
		return admission.PatchResponseFromRaw(raw, out)
	}
	var ops []jsonpatch.JsonPatchOperation
	for _, f := range fields {
		if equality.Semantic.DeepEqual(f.old, f.new) {
			continue
		}
		if f.empty {
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: f.path})
			continue
		}
		ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: f.path, Value: f.new})
	}
	return admission.Patched("", ops...)
}

func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "<generated>"
}

// relatedPod is the pod as an event's related object, when it has a name:
// it keeps one pod's event from being folded into another's series, which
// is keyed by regarding, related, reason and action, not by note, and would
// show only the first pod's note. Pods named by their controller
// (generateName) share its template, and so their findings.
func relatedPod(namespace string, pod *corev1.Pod) runtime.Object {
	if pod.Name == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: pod.Name}
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

// mutateSafely runs m, turning a panic into its error: a mutator that
// panics loses its own changes, as one that fails, and never the others'
// or the pod's admission.
func mutateSafely(ctx context.Context, m PodMutator, ns *corev1.Namespace, pod *corev1.Pod) (findings []Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			findings, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	return m.Mutate(ctx, ns, pod)
}
