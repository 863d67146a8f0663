// Package version holds the release version of shardwise: the tag of its
// container images (make images), the chart's appVersion, and the version the
// operator's default allocator and OpAMP bridge images carry.
package version

// Version is the release. make images sets it with
// -ldflags "-X github.com/shardwise/shardwise/internal/version.Version=<v>" from
// the VERSION make variable, whose default is read from this line; a release
// commits the new value here, in charts/shardwise/Chart.yaml (appVersion) and
// in config/manager/manager.yaml, which this package's tests keep in step.
var Version = "v0.1.0"

// Registry is where the release's images are published.
const Registry = "ghcr.io/shardwise"

// Image is the release's image of a shardwise binary (allocator, operator,
// opamp-bridge), e.g. ghcr.io/shardwise/allocator:v0.1.0.
func Image(name string) string { return Registry + "/" + name + ":" + Version }
