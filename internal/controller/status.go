package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Every reconciler ends a pass that reached a verdict with an outcome, which
// reporter.finish records the same way for every kind: the Ready condition,
// status.observedGeneration, a Warning event when the failure is news, and a
// status write only when the status changed. A pass that fails before any
// verdict (a read error) returns its error and writes nothing.

// outcome is the verdict of one reconcile pass.
type outcome struct {
	status  metav1.ConditionStatus
	reason  string
	message string
	// observed says the pass judged the whole generation (applied it, or
	// refused it for good), so status.observedGeneration advances to it. A
	// failed apply is retried and does not advance it.
	observed bool
	// err is what Reconcile returns once the status is written.
	err error
	// requeueAfter asks for another pass without an event.
	requeueAfter time.Duration
}

// ready is the outcome of a pass that applied every desired object.
func ready(message string) outcome {
	return outcome{status: metav1.ConditionTrue, reason: ReasonReconciled, message: message, observed: true}
}

// degraded is the outcome of a pass that did what it could, or kept the last
// good objects, for a reason outside the resource's spec (a missing API, a
// conflict with another resource) that a later pass may find gone.
func degraded(reason, message string) outcome {
	return outcome{status: metav1.ConditionFalse, reason: reason, message: message, observed: true}
}

// invalid is the outcome of a spec that will never build: err, wrapped with
// op, is terminal, so the pass is not retried until the resource changes.
func invalid(reason, op string, err error) outcome {
	return outcome{
		status: metav1.ConditionFalse, reason: reason, message: err.Error(), observed: true,
		err: reconcile.TerminalError(fmt.Errorf("%s: %w", op, err)),
	}
}

// applyFailed is the outcome of a pass whose writes failed; it is retried.
func applyFailed(err error) outcome {
	return outcome{status: metav1.ConditionFalse, reason: ReasonApplyFailed, message: err.Error(), err: err}
}

// after returns o with another pass requested after d.
func (o outcome) after(d time.Duration) outcome {
	o.requeueAfter = d
	return o
}

// resourceStatus is the status of one resource as a pass read it, and
// pointers into the resource for the fields every kind has.
type resourceStatus struct {
	obj                client.Object
	conditions         *[]metav1.Condition
	observedGeneration *int64
	// before is a copy of the status as read; current is the status field.
	before, current any
	kind            string
}

func collectorStatus(c *v1beta1.OpenTelemetryCollector) resourceStatus {
	return resourceStatus{c, &c.Status.Conditions, &c.Status.ObservedGeneration, c.Status.DeepCopy(), &c.Status, "collector"}
}

func allocatorStatus(ta *v1alpha1.TargetAllocator) resourceStatus {
	return resourceStatus{ta, &ta.Status.Conditions, &ta.Status.ObservedGeneration, ta.Status.DeepCopy(), &ta.Status, "target allocator"}
}

func bridgeStatus(b *v1alpha1.OpAMPBridge) resourceStatus {
	return resourceStatus{b, &b.Status.Conditions, &b.Status.ObservedGeneration, b.Status.DeepCopy(), &b.Status, "opamp bridge"}
}

// reporter records outcomes; a nil recorder records no events.
type reporter struct {
	client   client.Client
	recorder events.EventRecorder
}

// finish records o in s's resource and returns what Reconcile returns. When
// the status write fails, the pass is retried so that its verdict is
// recorded, even a terminal one.
func (r reporter) finish(ctx context.Context, s resourceStatus, o outcome) (reconcile.Result, error) {
	if o.status != metav1.ConditionTrue {
		warnIfNews(r.recorder, s.obj, *s.conditions, ConditionReady, o.reason, o.message)
	}
	setReady(s.conditions, s.obj.GetGeneration(), o.status, o.reason, o.message)
	if o.observed {
		*s.observedGeneration = s.obj.GetGeneration()
	}
	err := updateStatus(ctx, r.client, s.obj, s.before, s.current, s.kind)
	switch {
	case err == nil:
		return reconcile.Result{RequeueAfter: o.requeueAfter}, o.err
	case o.err == nil || errors.Is(o.err, reconcile.TerminalError(nil)):
		return reconcile.Result{}, err
	default:
		return reconcile.Result{}, errors.Join(o.err, err)
	}
}

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

// warnIfNews records a Warning event with reason and message on obj, whose
// conditions are conds as read, unless its condition condType already says
// False for the same reason with the same message: a failure is told once,
// not at every pass it lasts through. Another reason, or another message
// under the same reason (a different error in the spec, another collector in
// the way), is news.
func warnIfNews(rec events.EventRecorder, obj client.Object, conds []metav1.Condition, condType, reason, message string) {
	if old := meta.FindStatusCondition(conds, condType); old != nil &&
		old.Status == metav1.ConditionFalse && old.Reason == reason && old.Message == message {
		return
	}
	if rec != nil {
		rec.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Reconcile", "%s", message)
	}
}

// setReady sets the Ready condition; its transition time changes only when
// its status does.
func setReady(conds *[]metav1.Condition, generation int64, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: ConditionReady, Status: status, Reason: reason, Message: message, ObservedGeneration: generation,
	})
}
