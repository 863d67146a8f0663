package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/internal/manifests"
)

// FieldOwner is the server-side apply field manager of the operator.
const FieldOwner = "shardwise-operator"

// applier writes desired objects with server-side apply. Applying an
// unchanged object is a no-op on the server: the resourceVersion stays, so
// reconciles can repeat freely. With a memo, an object whose desired state
// and live version are those of the last apply is not even sent.
type applier struct {
	client client.Client
	scheme *runtime.Scheme
	memo   *applyMemo
}

// applyMemo remembers, per object, the desired state last applied and the
// object's version right after, so a reconcile triggered by a status-only
// change of an owned object (a pod became ready) writes nothing. Its zero
// value is ready to use.
type applyMemo struct {
	mu sync.Mutex // guards m
	m  map[string]appliedVersion
}

// appliedVersion is what the memo keeps of one apply.
type appliedVersion struct {
	hash       string
	uid        types.UID
	generation int64
	rv         string
}

func (m *applyMemo) get(key string) (appliedVersion, bool) {
	if m == nil {
		return appliedVersion{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	return v, ok
}

func (m *applyMemo) set(key string, v appliedVersion) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]appliedVersion{}
	}
	m.m[key] = v
}

func (m *applyMemo) forget(key string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
}

// apply applies obj, controlled by owner when owner is not nil.
func (a applier) apply(ctx context.Context, owner client.Object, obj client.Object) error {
	if owner != nil {
		if err := controllerutil.SetControllerReference(owner, obj, a.scheme); err != nil {
			return fmt.Errorf("set owner of %s %s: %w", kindOf(obj), obj.GetName(), err)
		}
	}
	u, err := desiredUnstructured(obj)
	if err != nil {
		return err
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	hash := manifests.Hash(string(b))
	key := u.GetAPIVersion() + "/" + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	if a.unchanged(ctx, obj, key, hash) {
		return nil
	}
	err = a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if apierrors.IsInvalid(err) && recreatable(obj) {
		err = a.recreate(ctx, obj, u, err)
	}
	if err != nil {
		a.memo.forget(key)
		return fmt.Errorf("apply %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	a.memo.set(key, appliedVersion{hash: hash, uid: u.GetUID(), generation: u.GetGeneration(), rv: u.GetResourceVersion()})
	return nil
}

// unchanged says whether the live object (read through the client, the
// cache in the operator) is the one the memo recorded for this desired
// state: same object, same generation (for kinds with a spec the API server
// versions; status changes do not count) or same resourceVersion otherwise,
// and still carrying the desired labels and annotations.
func (a applier) unchanged(ctx context.Context, obj client.Object, key, hash string) bool {
	last, ok := a.memo.get(key)
	if !ok || last.hash != hash {
		return false
	}
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false
	}
	if err := a.client.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return false
	}
	if live.GetUID() != last.uid {
		return false
	}
	if live.GetGeneration() > 0 {
		if live.GetGeneration() != last.generation {
			return false
		}
	} else if live.GetResourceVersion() != last.rv {
		return false
	}
	return subset(obj.GetLabels(), live.GetLabels()) && subset(obj.GetAnnotations(), live.GetAnnotations())
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// recreatable are the kinds whose immutable fields (a selector, a
// StatefulSet's serviceName or volumeClaimTemplates) may change with the
// resource: the operator deletes and recreates them, as the upstream operator
// does, rather than stay blocked.
func recreatable(obj client.Object) bool {
	switch obj.(type) {
	case *appsv1.StatefulSet, *appsv1.Deployment:
		return true
	}
	return false
}

// recreate handles an apply refused as invalid: if the desired object is
// valid on its own (a server-side dry-run create under another name passes),
// the refusal is an immutable field, so the live object is deleted (its pods
// with it) and the desired one created. Otherwise applyErr is returned and
// the live object is kept.
func (a applier) recreate(ctx context.Context, obj client.Object, u *unstructured.Unstructured, applyErr error) error {
	probe := u.DeepCopy()
	probe.SetName("")
	probe.SetGenerateName("shardwise-dry-run-")
	probe.SetResourceVersion("")
	if err := a.client.Create(ctx, probe, client.DryRunAll); err != nil {
		return applyErr
	}
	live := u.DeepCopy()
	if err := a.client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s %s to change an immutable field: %w", kindOf(obj), obj.GetName(), err)
	}
	fresh := u.DeepCopy()
	fresh.SetResourceVersion("")
	return a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(fresh), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// desiredUnstructured converts a built object into an apply configuration:
// without status and without the nulls of unset struct fields, so the
// operator claims exactly the fields the builder set.
func desiredUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	delete(m, "status")
	dropNulls(m)
	return &unstructured.Unstructured{Object: m}, nil
}

func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropNulls(em)
				}
			}
		}
	}
}

func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", obj)
}

// prune deletes the objects of the given kinds that owner controls (or, with
// a nil owner, that no object controls), that carry the instance labels, and
// that are not in keep (namespace/name by kind).
// keepExtra may veto a deletion (it returns true to keep).
func (a applier) prune(ctx context.Context, owner client.Object, namespace string, selector map[string]string,
	kinds []schema.GroupVersionKind, keep map[schema.GroupVersionKind][]string, keepExtra func(metav1.PartialObjectMetadata) bool,
) error {
	for _, gvk := range kinds {
		opts := []client.ListOption{client.MatchingLabels(selector)}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		items, err := a.list(ctx, gvk, opts...)
		if meta.IsNoMatchError(err) {
			continue // the kind is not installed (cert-manager): nothing to prune
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, item := range items {
			if owner != nil && !metav1.IsControlledBy(&item, owner) || owner == nil && metav1.GetControllerOf(&item) != nil {
				continue
			}
			if slices.Contains(keep[gvk], item.Namespace+"/"+item.Name) || (keepExtra != nil && keepExtra(item)) {
				continue
			}
			item.SetGroupVersionKind(gvk)
			if err := a.client.Delete(ctx, &item, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("prune %s %s: %w", gvk.Kind, item.Name, err)
			}
		}
	}
	return nil
}

// sync applies objs, controlled by owner, and prunes the objects of kinds in
// owner's namespace that carry its instance labels, that owner controls and
// that objs do not name; keepExtra may veto a deletion.
func (a applier) sync(ctx context.Context, owner client.Object, objs []client.Object, kinds []schema.GroupVersionKind, keepExtra func(metav1.PartialObjectMetadata) bool) error {
	for _, obj := range objs {
		if err := a.apply(ctx, owner, obj); err != nil {
			return err
		}
	}
	keep, err := names(a.scheme, objs)
	if err != nil {
		return err
	}
	return a.prune(ctx, owner, owner.GetNamespace(), instanceSelector(owner.GetNamespace(), owner.GetName()), kinds, keep, keepExtra)
}

// list lists the metadata of the objects of a kind. Kinds the operator
// caches are read through the cache; cert-manager's and prometheus-operator's,
// which it does not watch, are read from the API server as unstructured
// objects.
func (a applier) list(ctx context.Context, gvk schema.GroupVersionKind, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	if gvk.Group != manifests.CertManagerGroupVersion.Group && gvk.Group != manifests.MonitoringGroupVersion.Group {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := a.client.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := a.client.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	out := make([]metav1.PartialObjectMetadata, 0, len(list.Items))
	for _, u := range list.Items {
		out = append(out, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: u.GetNamespace(), Name: u.GetName(), UID: u.GetUID(), OwnerReferences: u.GetOwnerReferences(),
		}})
	}
	return out, nil
}

// names indexes desired objects by kind, as namespace/name.
func names(scheme *runtime.Scheme, objs []client.Object) (map[schema.GroupVersionKind][]string, error) {
	out := map[schema.GroupVersionKind][]string{}
	for _, o := range objs {
		gvk, err := gvkOf(scheme, o)
		if err != nil {
			return nil, err
		}
		out[gvk] = append(out[gvk], o.GetNamespace()+"/"+o.GetName())
	}
	return out, nil
}

func gvkOf(scheme *runtime.Scheme, o client.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of %T: %w", o, err)
	}
	return gvks[0], nil
}

// instanceSelector selects every object the operator built for an instance.
func instanceSelector(namespace, instance string) map[string]string {
	return map[string]string{
		manifests.LabelManagedBy: manifests.ManagedBy,
		manifests.LabelInstance:  manifests.InstanceLabel(namespace, instance),
	}
}

// ignoreNotFound is client.IgnoreNotFound for API errors from other calls.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
