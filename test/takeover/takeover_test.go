package takeover

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/internal/testenv"
)

// upstreamChartArgs are the arguments upstream's Helm chart passes its
// operator (with a values file that turns on what users commonly do), the
// addresses moved to loopback, the webhooks off (no serving certificate
// here; the takeover is about the reconcilers) and leader election off
// (upstream's needs to run in a cluster to find its namespace), and
// upstream's NetworkPolicy for its own Deployment off (there is none).
func upstreamChartArgs(t *testing.T, probe int) []string {
	return []string{
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(freePort(t)),
		"--health-probe-addr=127.0.0.1:" + strconv.Itoa(probe),
		"--feature-gates=-operand.networkpolicy,-operator.networkpolicy",
		"--zap-log-level=info",
		"--zap-time-encoding=rfc3339nano",
		"--enable-nginx-instrumentation=true",
		"--create-rbac-permissions",
		"--enable-cr-metrics=true",
		"--ignore-missing-collector-crds",
		"--enable-webhooks=false",
	}
}

// replayed is an object of the golden input as created: its kind, key,
// UID and, for a Service, cluster IP.
type replayed struct {
	kind, namespace, name string
	uid                   types.UID
	clusterIP             string
}

func (r replayed) String() string { return r.kind + " " + r.namespace + "/" + r.name }

// TestTakeover: the upstream operator v0.158's own e2e inputs for every
// workload mode, a target allocator of a collector, a standalone
// TargetAllocator with prometheusCR and an Instrumentation, with the objects
// upstream built for them (testdata/upstream-v0.158, PROVENANCE.md) as if
// upstream had run and was stopped; then the shardwise operator binary
// starts with the arguments upstream's chart passes. Every workload and
// Service keeps its UID (Services their cluster IP): at most a rolling
// update, never a delete. Each collector reports Ready; a replicas change is
// reconciled; every object left is controlled by a live resource.
func TestTakeover(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv("SHARDWISE_OPERATOR_BIN") == "" {
		msg := "set KUBEBUILDER_ASSETS and SHARDWISE_OPERATOR_BIN (make test-takeover does)"
		if os.Getenv("SHARDWISE_REQUIRE_TAKEOVER") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cl := startCluster(t, filepath.Join(testenv.Root(), "config", "crd", "bases"), testenv.MonitoringCRDs())
	ctx := t.Context()
	in := inputs(t)
	created := cl.createInputs(t, in)
	uids := map[string]types.UID{}
	for _, o := range created {
		uids[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetUID()
	}

	// Replay what upstream built, owner references pointed at the new
	// resources; TargetAllocators first, since some objects are theirs.
	var before []replayed
	upstream := map[string]bool{} // Kind ns/name of every object upstream built
	for _, i := range in {
		raw, err := os.ReadFile(filepath.Join(goldenDir, i.namespace+".yaml"))
		require.NoError(t, err, "golden input of %s", i.namespace)
		objs, err := decodeAll(raw)
		require.NoError(t, err)
		slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
			return boolInt(b.GetKind() == "TargetAllocator") - boolInt(a.GetKind() == "TargetAllocator")
		})
		for _, o := range objs {
			o.SetNamespace(i.namespace)
			refs := o.GetOwnerReferences()
			for k := range refs {
				uid, ok := uids[refs[k].Kind+"/"+i.namespace+"/"+refs[k].Name]
				require.True(t, ok, "%s %s: owner %s %s is not in the inputs", o.GetKind(), o.GetName(), refs[k].Kind, refs[k].Name)
				refs[k].UID = uid
			}
			o.SetOwnerReferences(refs)
			require.NoError(t, cl.client.Create(ctx, o), "replay %s %s/%s", o.GetKind(), i.namespace, o.GetName())
			uids[o.GetKind()+"/"+i.namespace+"/"+o.GetName()] = o.GetUID()
			upstream[o.GetKind()+" "+i.namespace+"/"+o.GetName()] = true
			switch o.GetKind() {
			case "Deployment", "StatefulSet", "DaemonSet", "Service":
				ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP")
				before = append(before, replayed{o.GetKind(), i.namespace, o.GetName(), o.GetUID(), ip})
			}
		}
	}
	require.NotEmpty(t, before)

	probe := freePort(t)
	start(t, "shardwise operator", os.Getenv("SHARDWISE_OPERATOR_BIN"), cl.kubeconfig, probe, upstreamChartArgs(t, probe)...)

	// Each collector reports Ready.
	var collectors []*unstructured.Unstructured
	for _, o := range created {
		if o.GetKind() == "OpenTelemetryCollector" {
			collectors = append(collectors, o)
		}
	}
	for _, c := range collectors {
		eventually(t, waitFor, "collector "+c.GetNamespace()+"/"+c.GetName()+" Ready", func() error {
			return ready(t, cl.client, c)
		})
	}

	// Kept, not recreated.
	var recreated []string
	for _, r := range before {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(map[string]string{"Service": "v1"}[r.kind])
		if u.GetAPIVersion() == "" {
			u.SetAPIVersion("apps/v1")
		}
		u.SetKind(r.kind)
		err := cl.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: r.name}, u)
		ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP")
		switch {
		case err != nil:
			recreated = append(recreated, fmt.Sprintf("%s: %v", r, err))
		case u.GetUID() != r.uid:
			recreated = append(recreated, fmt.Sprintf("%s: recreated (UID %s, was %s)", r, u.GetUID(), r.uid))
		case r.kind == "Service" && ip != r.clusterIP:
			recreated = append(recreated, fmt.Sprintf("%s: cluster IP %s, was %s", r, ip, r.clusterIP))
		}
	}
	require.Empty(t, recreated, "upstream's workloads and Services must be adopted, not recreated")

	// Nothing is left that nobody owns: every object an input resource's
	// tree controlled is controlled by a live object.
	for _, i := range in {
		for _, o := range cl.built(t, i.namespace) {
			ref := metav1.GetControllerOf(o)
			owner := &unstructured.Unstructured{}
			owner.SetAPIVersion(ref.APIVersion)
			owner.SetKind(ref.Kind)
			require.NoError(t, cl.client.Get(ctx, client.ObjectKey{Namespace: i.namespace, Name: ref.Name}, owner), "%s %s/%s: owner", o.GetKind(), i.namespace, o.GetName())
			require.Equal(t, ref.UID, owner.GetUID(), "%s %s/%s: its owner was replaced", o.GetKind(), i.namespace, o.GetName())
		}
	}

	// What upstream built that shardwise does not: only these kinds may go
	// (docs/migration.md lists them): upstream's default disruption budgets
	// and its rendered configurations, which the new pods no longer mount.
	var removed []string
	for _, i := range in {
		left := map[string]bool{}
		for _, o := range cl.built(t, i.namespace) {
			left[o.GetKind()+" "+i.namespace+"/"+o.GetName()] = true
		}
		for k := range upstream {
			if strings.Contains(k, " "+i.namespace+"/") && !left[k] {
				removed = append(removed, k)
			}
		}
	}
	slices.Sort(removed)
	t.Logf("upstream's objects shardwise removed: %v", removed)
	for _, k := range removed {
		kind, _, _ := strings.Cut(k, " ")
		require.Contains(t, []string{"ConfigMap", "PodDisruptionBudget"}, kind, "%s was removed", k)
	}

	// A later change is reconciled.
	c := collectors[slices.IndexFunc(collectors, func(o *unstructured.Unstructured) bool { return o.GetNamespace() == "takeover-deployment" })]
	require.NoError(t, cl.client.Get(ctx, client.ObjectKeyFromObject(c), c))
	require.NoError(t, unstructured.SetNestedField(c.Object, int64(3), "spec", "replicas"))
	require.NoError(t, cl.client.Update(ctx, c))
	eventually(t, waitFor, "the replicas change reaches the Deployment", func() error {
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("apps/v1")
		d.SetKind("Deployment")
		if err := cl.client.Get(ctx, client.ObjectKey{Namespace: c.GetNamespace(), Name: c.GetName() + "-collector"}, d); err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 3 {
			return fmt.Errorf("replicas %d", n)
		}
		return nil
	})
}

// ready says whether the collector's Ready condition of its generation is
// True.
func ready(t *testing.T, c client.Client, o *unstructured.Unstructured) error {
	u := o.DeepCopy()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(o), u); err != nil {
		return err
	}
	var conds []metav1.Condition
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, r := range raw {
		m, _ := r.(map[string]any)
		status, _ := m["status"].(string)
		typ, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		conds = append(conds, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Message: msg, ObservedGeneration: gen})
	}
	c0 := meta.FindStatusCondition(conds, "Ready")
	if c0 == nil || c0.ObservedGeneration != u.GetGeneration() || c0.Status != metav1.ConditionTrue {
		return fmt.Errorf("not Ready: %s", strings.TrimSpace(fmt.Sprint(conds)))
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
