package takeover

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/internal/testenv"
)

// goldenDir holds what the upstream operator v0.158 built for the inputs.
const goldenDir = "testdata/upstream-v0.158"

// TestGenerateUpstreamGolden writes goldenDir: it runs the upstream
// operator binary (SHARDWISE_UPSTREAM_OPERATOR_BIN, built by
// ../shared/upstream/build-operator.sh) on a control plane with upstream's
// CRDs (SHARDWISE_UPSTREAM_CRDS, its config/crd/bases) and webhooks off,
// creates the inputs, waits until what it builds stops changing, and
// writes each namespace's objects that an input resource controls, without
// the fields the API server sets. Skipped without both variables: it
// regenerates committed files (PROVENANCE.md says how).
func TestGenerateUpstreamGolden(t *testing.T) {
	bin, crds := os.Getenv("SHARDWISE_UPSTREAM_OPERATOR_BIN"), os.Getenv("SHARDWISE_UPSTREAM_CRDS")
	if bin == "" || crds == "" || os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("set SHARDWISE_UPSTREAM_OPERATOR_BIN, SHARDWISE_UPSTREAM_CRDS and KUBEBUILDER_ASSETS to regenerate " + goldenDir)
	}
	cl := startCluster(t, crds, testenv.MonitoringCRDs())
	probe := freePort(t)
	// The same arguments the takeover gives shardwise: upstream's chart's.
	start(t, "upstream operator", bin, cl.kubeconfig, probe, append(upstreamChartArgs(t, probe), "--metrics-secure=false")...)
	in := inputs(t)
	cl.createInputs(t, in)

	// Settled: the same objects (names and resourceVersions) for 5 s.
	snapshot := func() string {
		var b bytes.Buffer
		for _, i := range in {
			for _, o := range cl.built(t, i.namespace) {
				fmt.Fprintf(&b, "%s/%s/%s@%s\n", i.namespace, o.GetKind(), o.GetName(), o.GetResourceVersion())
			}
		}
		return b.String()
	}
	last, since := "", time.Now()
	eventually(t, 3*waitFor, "upstream's objects settle", func() error {
		now := snapshot()
		if now != last {
			last, since = now, time.Now()
		}
		if last == "" || time.Since(since) < 5*time.Second {
			return fmt.Errorf("still changing:\n%s", last)
		}
		return nil
	})

	require.NoError(t, os.MkdirAll(goldenDir, 0o755))
	for _, i := range in {
		var b bytes.Buffer
		for _, o := range cl.built(t, i.namespace) {
			strip(o)
			y, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			b.WriteString("---\n")
			b.Write(y)
		}
		require.NoError(t, os.WriteFile(filepath.Join(goldenDir, i.namespace+".yaml"), b.Bytes(), 0o600))
	}
}

// strip removes what the API server sets and what a replay must not carry:
// identity, versions, status, managed fields, Services' assigned cluster
// IPs, and
// the owner's UID (the replay points the reference at the new resource).
func strip(o *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	delete(o.Object, "status")
	if ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP"); o.GetKind() == "Service" && ip != corev1.ClusterIPNone {
		// Assigned by the API server; a headless Service's None is its spec.
		unstructured.RemoveNestedField(o.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(o.Object, "spec", "clusterIPs")
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].UID = ""
	}
	o.SetOwnerReferences(refs)
}
