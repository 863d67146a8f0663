package webhook

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// owner is one object of a pod's owner chain.
type owner struct {
	Kind string
	Name string
	UID  types.UID
}

// ownerAPIVersion is where the owners whose own owners matter live.
var ownerAPIVersion = map[string]string{"replicaset": "apps/v1", "job": "batch/v1"}

// ownerChain flattens a pod's owner chain, nearest first: each owner of a
// known kind, and through ReplicaSets and Jobs their owners (Deployment,
// CronJob), as upstream. Only metadata is read, through reader (the cache)
// and, for an owner created a moment ago that the cache has not seen yet,
// apiReader. The chain is returned with the first error: what could be read
// is still useful.
func ownerChain(ctx context.Context, reader, apiReader client.Reader, namespace string, refs []metav1.OwnerReference) ([]owner, error) {
	return ownerLevel(ctx, reader, apiReader, namespace, refs, 0)
}

func ownerLevel(ctx context.Context, reader, apiReader client.Reader, namespace string, refs []metav1.OwnerReference, depth int) ([]owner, error) {
	var out []owner
	var firstErr error
	for _, ref := range refs {
		kind := strings.ToLower(ref.Kind)
		switch kind {
		case "replicaset", "deployment", "statefulset", "daemonset", "job", "cronjob":
		default:
			continue
		}
		out = append(out, owner{Kind: ref.Kind, Name: ref.Name, UID: ref.UID})
		apiVersion, ok := ownerAPIVersion[kind]
		if !ok || depth > 0 {
			continue
		}
		meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: ref.Kind}}
		key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
		err := reader.Get(ctx, key, meta, client.UnsafeDisableDeepCopy)
		if apierrors.IsNotFound(err) && apiReader != nil {
			err = apiReader.Get(ctx, key, meta)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("get %s %s: %w", ref.Kind, key, err)
			}
			continue
		}
		parents, err := ownerLevel(ctx, reader, apiReader, namespace, meta.OwnerReferences, depth+1)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		out = append(out, parents...)
	}
	return out, firstErr
}
