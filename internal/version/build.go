package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Build describes the running binary: the release it was built as and the
// source revision and Go toolchain that built it.
type Build struct {
	// Version is the release (Version).
	Version string
	// Revision is the VCS commit the binary was built from, with a "-dirty"
	// suffix for a modified work tree; "unknown" when the build recorded none
	// (go run, or a build outside a checkout).
	Revision string
	// GoVersion is the toolchain, e.g. go1.26.0.
	GoVersion string
}

// Revision is the source revision when the toolchain recorded none (a build
// with -buildvcs=false, or outside a checkout): make build and make images
// set it with -ldflags "-X github.com/shardwise/shardwise/internal/version.Revision=<commit>".
var Revision string

// Current returns the running binary's build.
func Current() Build {
	b := Build{Version: Version, Revision: "unknown", GoVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if Revision != "" {
			b.Revision = Revision
		}
		return b
	}
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Revision != "unknown" {
		b.Revision += "-dirty"
	}
	if b.Revision == "unknown" && Revision != "" {
		b.Revision = Revision
	}
	return b
}

// String is the line --version prints: "allocator v0.1.0 (revision 1a2b…, go1.26.0)".
func (b Build) String(binary string) string {
	return fmt.Sprintf("%s %s (revision %s, %s)", binary, b.Version, b.Revision, b.GoVersion)
}

// NewCollector returns the shardwise_build_info gauge: always 1, labelled
// with the binary's name and its build, so a dashboard can tell which
// release each process runs (the convention of Prometheus' own build_info).
func NewCollector(binary string) prometheus.Collector {
	b := Current()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "shardwise_build_info",
		Help: "A metric with a constant 1 value labelled by the binary, its release version, source revision and Go version.",
		ConstLabels: prometheus.Labels{
			"binary":    binary,
			"version":   b.Version,
			"revision":  b.Revision,
			"goversion": b.GoVersion,
		},
	}, func() float64 { return 1 })
}

// AddFlag registers --version on fs; when the returned value is true after
// parsing, the binary prints Current().String(name) and exits 0.
func AddFlag(fs interface {
	BoolVar(p *bool, name string, value bool, usage string)
}) *bool {
	var v bool
	fs.BoolVar(&v, "version", false, "Print the version, source revision and Go version, and exit.")
	return &v
}
