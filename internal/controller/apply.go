package controller

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/internal/manifests"
)

// FieldOwner is the server-side apply field manager of the operator.
const FieldOwner = "shardwise-operator"

// applier writes desired objects with server-side apply. Applying an
// unchanged object is a no-op on the server: the resourceVersion stays, so
// reconciles can repeat freely.
type applier struct {
	client client.Client
	scheme *runtime.Scheme
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
	if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", kindOf(obj), obj.GetName(), err)
	}
	return nil
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

// prune deletes the objects of the given kinds that owner controls, that
// carry the instance labels, and that are not in keep (names by kind).
// keepExtra may veto a deletion (it returns true to keep).
func (a applier) prune(ctx context.Context, owner client.Object, namespace string, selector map[string]string,
	kinds []schema.GroupVersionKind, keep map[schema.GroupVersionKind][]string, keepExtra func(metav1.PartialObjectMetadata) bool,
) error {
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels(selector)}
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := a.client.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			if owner != nil && !metav1.IsControlledBy(&item, owner) {
				continue
			}
			if slices.Contains(keep[gvk], item.Name) || (keepExtra != nil && keepExtra(item)) {
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

// names indexes desired objects by kind.
func names(scheme *runtime.Scheme, objs []client.Object) (map[schema.GroupVersionKind][]string, error) {
	out := map[schema.GroupVersionKind][]string{}
	for _, o := range objs {
		gvk, err := gvkOf(scheme, o)
		if err != nil {
			return nil, err
		}
		out[gvk] = append(out[gvk], o.GetName())
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
		manifests.LabelInstance:  namespace + "." + instance,
	}
}

// ignoreNotFound is client.IgnoreNotFound for API errors from other calls.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
