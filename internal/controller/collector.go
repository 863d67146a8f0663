package controller

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// Condition type and reasons of the Ready condition.
const (
	ConditionReady = "Ready"

	ReasonReconciled       = "Reconciled"
	ReasonInvalidConfig    = "InvalidConfig"
	ReasonModeNotSupported = "ModeNotSupported"
	ReasonApplyFailed      = "ApplyFailed"
)

// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors;targetallocators,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors/status;targetallocators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=opentelemetry.io,resources=opentelemetrycollectors/finalizers;targetallocators/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services;serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets;deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// CollectorReconciler reconciles an OpenTelemetryCollector into its objects.
type CollectorReconciler struct {
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	Settings manifests.Settings
}

var _ reconcile.Reconciler = (*CollectorReconciler)(nil)

// collectorKinds are the kinds a collector owns, pruned when no longer desired.
var collectorKinds = []schema.GroupVersionKind{
	corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
	corev1.SchemeGroupVersion.WithKind("Service"),
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"),
	v1alpha1.GroupVersion.WithKind("TargetAllocator"),
}

// SetupWithManager registers the reconciler; opts.MaxConcurrentReconciles bounds the parallel reconciles.
func (r *CollectorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1beta1.OpenTelemetryCollector{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&v1alpha1.TargetAllocator{}).
		WithOptions(opts).
		Named("opentelemetrycollector").
		Complete(r)
}

// Reconcile builds the desired objects from a full read of the collector,
// applies them, prunes what is no longer desired and records status. Invalid
// input writes no object at all.
func (r *CollectorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var c v1beta1.OpenTelemetryCollector
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c.Spec.ManagementState == v1beta1.ManagementStateUnmanaged || !c.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	before := c.Status.DeepCopy()

	desired, err := manifests.BuildCollector(&c, r.Settings)
	if err != nil {
		reason := ReasonInvalidConfig
		if errors.Is(err, manifests.ErrModeUnsupported) {
			reason = ReasonModeNotSupported
		}
		r.event(&c, corev1.EventTypeWarning, reason, err)
		setReady(&c.Status.Conditions, c.Generation, metav1.ConditionFalse, reason, err.Error())
		c.Status.ObservedGeneration = c.Generation
		if serr := r.updateStatus(ctx, &c, before); serr != nil {
			return reconcile.Result{}, serr
		}
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("build collector: %w", err))
	}

	if err := r.apply(ctx, &c, desired); err != nil {
		r.event(&c, corev1.EventTypeWarning, ReasonApplyFailed, err)
		setReady(&c.Status.Conditions, c.Generation, metav1.ConditionFalse, ReasonApplyFailed, err.Error())
		if serr := r.updateStatus(ctx, &c, before); serr != nil {
			return reconcile.Result{}, errors.Join(err, serr)
		}
		return reconcile.Result{}, err
	}

	if err := r.observe(ctx, &c, desired); err != nil {
		return reconcile.Result{}, err
	}
	setReady(&c.Status.Conditions, c.Generation, metav1.ConditionTrue, ReasonReconciled, "every desired object is applied")
	c.Status.ObservedGeneration = c.Generation
	return reconcile.Result{}, r.updateStatus(ctx, &c, before)
}

func (r *CollectorReconciler) apply(ctx context.Context, c *v1beta1.OpenTelemetryCollector, desired manifests.Collector) error {
	a := applier{client: r.Client, scheme: r.Scheme}
	for _, obj := range desired.Objects {
		if err := a.apply(ctx, c, obj); err != nil {
			return err
		}
	}
	keep, err := names(r.Scheme, desired.Objects)
	if err != nil {
		return err
	}
	versions, err := r.configVersionsToKeep(ctx, c)
	if err != nil {
		return err
	}
	return a.prune(ctx, c, c.Namespace, instanceSelector(c.Namespace, c.Name), collectorKinds, keep,
		func(m metav1.PartialObjectMetadata) bool { return versions[m.Name] })
}

// configVersionsToKeep returns the older collector ConfigMaps kept for
// rollback: the newest configVersions-1 besides the current one.
func (r *CollectorReconciler) configVersionsToKeep(ctx context.Context, c *v1beta1.OpenTelemetryCollector) (map[string]bool, error) {
	var list corev1.ConfigMapList
	sel := manifests.SelectorLabels(c.Namespace, c.Name, manifests.ComponentCollector)
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels(sel)); err != nil {
		return nil, fmt.Errorf("list collector config maps: %w", err)
	}
	prefix := manifests.CollectorName(c.Name) + "-"
	var cms []corev1.ConfigMap
	for _, cm := range list.Items {
		if metav1.IsControlledBy(&cm, c) && strings.HasPrefix(cm.Name, prefix) {
			cms = append(cms, cm)
		}
	}
	// Newest first; the current config is among them and counts as one version.
	slices.SortFunc(cms, func(a, b corev1.ConfigMap) int {
		if d := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); d != 0 {
			return d
		}
		return strings.Compare(b.Name, a.Name)
	})
	n := 3
	if c.Spec.ConfigVersions != nil {
		n = int(*c.Spec.ConfigVersions)
	}
	keep := map[string]bool{}
	for i, cm := range cms {
		if i < n {
			keep[cm.Name] = true
		}
	}
	return keep, nil
}

// observe fills the scale status from the StatefulSet.
func (r *CollectorReconciler) observe(ctx context.Context, c *v1beta1.OpenTelemetryCollector, desired manifests.Collector) error {
	var sts appsv1.StatefulSet
	key := client.ObjectKey{Namespace: c.Namespace, Name: manifests.CollectorName(c.Name)}
	if err := r.Client.Get(ctx, key, &sts); err != nil {
		return fmt.Errorf("read statefulset: %w", err)
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	c.Status.Scale = v1beta1.ScaleSubresourceStatus{
		Selector:       labels.SelectorFromSet(desired.Selector).String(),
		Replicas:       replicas,
		StatusReplicas: fmt.Sprintf("%d/%d", sts.Status.ReadyReplicas, replicas),
	}
	if len(sts.Spec.Template.Spec.Containers) > 0 {
		c.Status.Image = sts.Spec.Template.Spec.Containers[0].Image
		c.Status.Version = imageVersion(c.Status.Image)
	}
	return nil
}

// versionTag matches image tags that are versions: 0.165.0, v1.2.3-rc.1.
var versionTag = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.+-]*)?)$`)

// imageVersion returns the version an image's tag names, without a leading
// "v"; "" when the image has no tag or its tag is not a version (latest, a
// digest only).
func imageVersion(image string) string {
	image, _, _ = strings.Cut(image, "@") // a digest
	name := image[strings.LastIndex(image, "/")+1:]
	_, tag, ok := strings.Cut(name, ":")
	if !ok {
		return ""
	}
	if m := versionTag.FindStringSubmatch(tag); m != nil {
		return m[1]
	}
	return ""
}

func (r *CollectorReconciler) updateStatus(ctx context.Context, c *v1beta1.OpenTelemetryCollector, before *v1beta1.OpenTelemetryCollectorStatus) error {
	return updateStatus(ctx, r.Client, c, before, &c.Status, "collector")
}

func (r *CollectorReconciler) event(obj runtime.Object, typ, reason string, err error) {
	recordEvent(r.Recorder, obj, typ, reason, err)
}

// setReady sets the Ready condition; its transition time changes only when
// its status does.
func setReady(conds *[]metav1.Condition, generation int64, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}
