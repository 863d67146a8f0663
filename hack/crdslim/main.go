// Command crdslim reads a CustomResourceDefinition of shardwise's API on its
// standard input and writes it to its standard output without the schema
// descriptions of the Kubernetes types it embeds (PodSpec fields, containers,
// volumes, affinity, resources...), keeping those of the fields and types
// declared under github.com/shardwise/shardwise/apis (package
// internal/crdslim has the rule). hack/chart-crds.sh runs it on each CRD of
// config/crd/bases for the Helm chart, whose release record must fit a
// Secret; config/crd/bases keeps every description.
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/crdslim"
)

// apisPkg is the import path whose descriptions the chart's CRDs keep.
const apisPkg = "github.com/shardwise/shardwise/apis"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

// run slims the CRD on stdin to stdout and returns the exit code: 2 for
// arguments (it takes none), 1 for a failure, which it reports on stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: crdslim <crd.yaml >slim.yaml")
		return 2
	}
	if err := slim(stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "crdslim:", err)
		return 1
	}
	return 0
}

// slim writes the CRD read from r, slimmed, to w.
func slim(r io.Reader, w io.Writer) error {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, v1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("register the API types: %w", err)
		}
	}
	in, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read CRD: %w", err)
	}
	out, err := crdslim.New(scheme.AllKnownTypes(), apisPkg).Slim(in)
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("write CRD: %w", err)
	}
	return nil
}
