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
