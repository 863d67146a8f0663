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
