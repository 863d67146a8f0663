package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// updateStatus writes obj's status when it differs from before, so a
// reconcile without change writes nothing. status is obj's status field.
func updateStatus(ctx context.Context, c client.Client, obj client.Object, before, status any, kind string) error {
	if equality.Semantic.DeepEqual(before, status) {
		return nil
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("update %s status: %w", kind, err)
	}
	return nil
}

// recordEvent records err as an event on obj; a nil recorder records nothing.
func recordEvent(rec events.EventRecorder, obj runtime.Object, typ, reason string, err error) {
	if rec != nil {
		rec.Eventf(obj, nil, typ, reason, "Reconcile", "%s", err.Error())
	}
}
