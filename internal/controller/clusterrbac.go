package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/shardwise/shardwise/internal/manifests"
)

// clusterRBAC manages the objects a namespaced resource cannot own:
// cluster-scoped RBAC, and RBAC in other namespaces. Garbage collection does
// not reach them, so they carry the resource's instance labels, are pruned by
// those, and a finalizer on the resource is present while any may exist.
type clusterRBAC struct {
	applier applier
	// finalizer is the resource's finalizer; kinds are the kinds pruned.
	finalizer string
	kinds     []schema.GroupVersionKind
	// kind names the resource in errors.
	kind string
	// component is the component label of the objects: a collector, an
	// allocator and a bridge of the same namespace and name share the
	// instance label.
	component string
}

// sync applies objs for owner and prunes the others of its instance. The
// finalizer is set before the first object is written and removed only once
// none is wanted and the prune has removed them.
func (c clusterRBAC) sync(ctx context.Context, owner client.Object, objs []client.Object) error {
	if len(objs) > 0 {
		if err := c.setFinalizer(ctx, owner, true); err != nil {
			return err
		}
	}
	for _, obj := range objs {
		if err := c.applier.apply(ctx, nil, obj); err != nil {
			return err
		}
	}
	keep, err := names(c.applier.scheme, objs)
	if err != nil {
		return err
	}
	if err := c.prune(ctx, owner, keep); err != nil {
		return err
	}
	if len(objs) == 0 {
		return c.setFinalizer(ctx, owner, false)
	}
	return nil
}

// release deletes every such object of owner; the finalizer stays.
func (c clusterRBAC) release(ctx context.Context, owner client.Object) error {
	return c.prune(ctx, owner, nil)
}

// finalize deletes every such object of owner, being deleted, and then lets
// it go.
func (c clusterRBAC) finalize(ctx context.Context, owner client.Object) error {
	if err := c.release(ctx, owner); err != nil {
		return err
	}
	return c.setFinalizer(ctx, owner, false)
}

func (c clusterRBAC) prune(ctx context.Context, owner client.Object, keep map[schema.GroupVersionKind][]string) error {
	sel := instanceSelector(owner.GetNamespace(), owner.GetName())
	if c.component != "" {
		sel[manifests.LabelComponent] = c.component
	}
	return c.applier.prune(ctx, nil, "", sel, c.kinds, keep, nil)
}

// setFinalizer adds or removes the finalizer, writing only on change.
func (c clusterRBAC) setFinalizer(ctx context.Context, owner client.Object, present bool) error {
	if controllerutil.ContainsFinalizer(owner, c.finalizer) == present {
		return nil
	}
	if present {
		controllerutil.AddFinalizer(owner, c.finalizer)
	} else {
		controllerutil.RemoveFinalizer(owner, c.finalizer)
	}
	if err := c.applier.client.Update(ctx, owner); ignoreNotFound(err) != nil {
		return fmt.Errorf("update %s finalizers: %w", c.kind, err)
	}
	return nil
}
