#!/usr/bin/env bash
# Regenerates third_party/prometheus: the library packages of
# github.com/prometheus/prometheus v0.305.1, copied from the module cache with
# three patches applied. The main module and the modules that import it
# (benchmarks, test/browser) replace the module with it; test/e2e does not
# import them and uses a released Prometheus. What each patch does, why it cannot be done outside Prometheus and
# what would let it go: third_party/README.md. make verify runs this script and
# fails on a diff.
#
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=v0.313.1
dst="$root/third_party/prometheus"
# Resolve the pristine module from a copy of go.mod without the replace.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$root/go.mod" "$tmp/go.mod"
cp "$root/go.sum" "$tmp/go.sum"
go mod edit -dropreplace=github.com/prometheus/prometheus "$tmp/go.mod"
src=$(cd "$root" && GOFLAGS=-mod=mod go mod download -modfile="$tmp/go.mod" -json "github.com/prometheus/prometheus@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[[ -d "$src" ]] || { echo "prometheus $version not in the module cache" >&2; exit 1; }

rm -rf "$dst"
mkdir -p "$dst"
cp "$src/go.mod" "$src/go.sum" "$src/LICENSE" "$src/NOTICE" "$dst/"
# Every library package (go mod tidy reads all build tags), without tests,
# test data, commands, documentation or the web UI.
(cd "$src" && find . -type f -name '*.go' ! -name '*_test.go' ! -path './cmd/*' ! -path './documentation/*' \
  ! -path '*/testdata/*' ! -path './web/ui/*' -print0 | xargs -0 cp --parents -t "$dst")
chmod -R u+w "$dst"

# First change: Kubernetes and file discoverers send a marker group (no
# targets, Source targetgroup.SyncedSource) once they have sent their initial
# target groups, so shardwise can tell "no targets yet" from "no targets".
# Prometheus' manager ignores the marker (an empty group is a no-op).
cat > "$dst/discovery/targetgroup/synced.go" <<'GO'
// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package targetgroup

// SyncedSource is the Source of the marker group, with no targets, that the
// Kubernetes and file discoverers send once they have sent their initial
// target groups: from then on an absent group means no targets, not "not
// read yet". Consumers that do not know the marker see an empty group, which
// changes nothing.
const SyncedSource = "shardwise/initial-sync-done"

// SyncedMarker returns the marker update.
func SyncedMarker() []*Group { return []*Group{{Source: SyncedSource}} }

// IsSyncedMarker reports whether an update is the marker.
func IsSyncedMarker(tgs []*Group) bool {
	return len(tgs) == 1 && tgs[0] != nil && tgs[0].Source == SyncedSource && len(tgs[0].Targets) == 0
}
GO
cat > "$dst/discovery/kubernetes/synced.go" <<'GO'
// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package kubernetes

import (
	"context"

	"k8s.io/client-go/util/workqueue"

	"github.com/prometheus/prometheus/discovery/targetgroup"
)

// sendSynced sends the initial-sync marker once the role's queue is first
// drained after its informers synced, and reports whether it has been sent.
func sendSynced(ctx context.Context, ch chan<- []*targetgroup.Group, q *workqueue.Typed[string], sent bool) bool {
	if sent || q.Len() > 0 {
		return sent
	}
	select {
	case <-ctx.Done():
	case ch <- targetgroup.SyncedMarker():
	}
	return true
}

// joinSynced returns the channel n role discoverers send to: it forwards
// their groups to ch and one marker once all n have sent theirs.
func joinSynced(ctx context.Context, ch chan<- []*targetgroup.Group, n int) chan<- []*targetgroup.Group {
	if n <= 1 {
		return ch
	}
	in := make(chan []*targetgroup.Group)
	go func() {
		left := n
		for {
			select {
			case <-ctx.Done():
				return
			case tgs := <-in:
				if targetgroup.IsSyncedMarker(tgs) {
					if left--; left != 0 {
						continue
					}
				}
				select {
				case ch <- tgs:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return in
}
GO
for f in endpoints endpointslice ingress node pod service; do
  sed -i -E 's/^\t\tfor ([a-z])\.process\(ctx, ch\) \{$/\t\tsynced := sendSynced(ctx, ch, \1.queue, false)\n\t\tfor \1.process(ctx, ch) {\n\t\t\tsynced = sendSynced(ctx, ch, \1.queue, synced)/' \
    "$dst/discovery/kubernetes/$f.go"
  grep -q 'synced = sendSynced' "$dst/discovery/kubernetes/$f.go"
done
perl -0pi -e 's/\tvar wg sync.WaitGroup\n\tfor _, dd := range d.discoverers \{\n\t\twg.Add\(1\)\n\t\tgo func\(d discovery.Discoverer\) \{\n\t\t\tdefer wg.Done\(\)\n\t\t\td.Run\(ctx, ch\)/\tvar wg sync.WaitGroup\n\tjoined := joinSynced(ctx, ch, len(d.discoverers))\n\tfor _, dd := range d.discoverers {\n\t\twg.Add(1)\n\t\tgo func(d discovery.Discoverer) {\n\t\t\tdefer wg.Done()\n\t\t\td.Run(ctx, joined)/' \
  "$dst/discovery/kubernetes/kubernetes.go"
grep -q 'd.Run(ctx, joined)' "$dst/discovery/kubernetes/kubernetes.go"
perl -0pi -e 's/\tdefer d.stop\(\)\n\n\td.refresh\(ctx, ch\)\n/\tdefer d.stop()\n\n\td.refresh(ctx, ch)\n\tselect {\n\tcase <-ctx.Done():\n\t\treturn\n\tcase ch <- targetgroup.SyncedMarker():\n\t}\n/' \
  "$dst/discovery/file/file.go"
grep -q 'targetgroup.SyncedMarker()' "$dst/discovery/file/file.go"

# Second change: every informer of the Kubernetes SD drops, before it caches
# an object, what no role reads (a client-go informer transform): managed
# fields of every object, and of a pod all but its metadata, node name, the
# containers' names, images and ports, and the status fields labels come
# from. Pods are most of what the SD holds; in a cluster of 100k pods this
# is most of the allocator's memory (benchmarks/README.md, clusterload).
cat > "$dst/discovery/kubernetes/trim.go" <<'GO'
// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package kubernetes

import (
	"unique"

	apiv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// trimObject is the transform of every informer of this package: it drops,
// before an object is cached, what no role reads, and interns the names and
// values of labels and annotations. It is idempotent, as client-go requires,
// and leaves anything but an object (a tombstone) as is.
func trimObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
		a.SetLabels(interned(a.GetLabels()))
		a.SetAnnotations(interned(a.GetAnnotations()))
	}
	if p, ok := obj.(*apiv1.Pod); ok {
		trimPod(p)
	}
	return obj, nil
}

// trimPod keeps what podLabels, buildPod and the endpoint roles read.
func trimPod(p *apiv1.Pod) {
	p.Spec = apiv1.PodSpec{
		NodeName:       p.Spec.NodeName,
		Containers:     trimContainers(p.Spec.Containers),
		InitContainers: trimContainers(p.Spec.InitContainers),
	}
	var ready []apiv1.PodCondition
	for _, c := range p.Status.Conditions {
		if c.Type == apiv1.PodReady {
			ready = append(ready, apiv1.PodCondition{Type: c.Type, Status: c.Status})
		}
	}
	p.Status = apiv1.PodStatus{
		Phase:                 p.Status.Phase,
		PodIP:                 p.Status.PodIP,
		HostIP:                p.Status.HostIP,
		Conditions:            ready,
		ContainerStatuses:     trimStatuses(p.Status.ContainerStatuses),
		InitContainerStatuses: trimStatuses(p.Status.InitContainerStatuses),
	}
}

func trimContainers(cs []apiv1.Container) []apiv1.Container {
	if cs == nil {
		return nil
	}
	out := make([]apiv1.Container, len(cs))
	for i, c := range cs {
		out[i] = apiv1.Container{Name: c.Name, Image: c.Image, Ports: c.Ports}
	}
	return out
}

// interned returns m with its keys and values replaced by their canonical
// copies (package unique): the pods of one workload carry the same label and
// annotation strings, and each decoded object has its own copies of them,
// which every target built from the pod then shares. It builds a new map of
// m's size: assigning into m in place turns a full small map (8 entries)
// into a table twice its size.
func interned(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

func trimStatuses(ss []apiv1.ContainerStatus) []apiv1.ContainerStatus {
	if ss == nil {
		return nil
	}
	out := make([]apiv1.ContainerStatus, len(ss))
	for i, s := range ss {
		out[i] = apiv1.ContainerStatus{Name: s.Name, ContainerID: s.ContainerID}
	}
	return out
}
GO
for f in SharedInformer SharedIndexInformer; do
  perl -0pi -e 's/(\tinformer := cache.New'"$f"'\(lw, exampleObject, defaultEventHandlerResyncPeriod(, indexers)?\)\n)/$1\tif err := informer.SetTransform(trimObject); err != nil {\n\t\tpanic(err)\n\t}\n/' \
    "$dst/discovery/kubernetes/kubernetes.go"
done
[[ $(grep -c 'informer.SetTransform(trimObject)' "$dst/discovery/kubernetes/kubernetes.go") == 2 ]]
# Third change: addObjectMetaLabels interns the label names it builds from an
# object's labels and annotations (discovery/kubernetes/intern.go):
# the same strings, one copy each instead of one per target.
cat > "$dst/discovery/kubernetes/intern.go" <<'GO'
// Added by shardwise (third_party/prometheus.sh; why: third_party/README.md).

package kubernetes

import (
	"unique"

	"github.com/prometheus/common/model"
)

// internName returns the canonical copy of a label name built per object:
// addObjectMetaLabels makes two names per label and annotation of every pod
// for every target of the pod, the same few names each time.
func internName(s string) model.LabelName {
	return model.LabelName(unique.Make(s).Value())
}
GO
sed -i -E 's/labelSet\[model\.LabelName\((metaLabelPrefix\+resource\+"_(label|labelpresent|annotation|annotationpresent)_"\+ln)\)\]/labelSet[internName(\1)]/' \
  "$dst/discovery/kubernetes/kubernetes.go"
[[ $(grep -c 'labelSet\[internName(' "$dst/discovery/kubernetes/kubernetes.go") == 4 ]]

cat > "$dst/SHARDWISE.md" <<MD
# Patched copy of github.com/prometheus/prometheus $version

Generated by third_party/prometheus.sh; do not edit. Library packages only (no tests, test
data, commands or web UI), with three patches: third_party/README.md says what each does, why
it cannot be done outside Prometheus and what would let it go.
MD
echo "third_party/prometheus: prometheus $version, patched"
