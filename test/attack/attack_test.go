package attack

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// attack is one item of issue 24: run makes the tenant's attempts, asserts
// that each fails and what stopped it, and records a row per attempt.
type attack struct {
	item string // the item number
	name string
	run  func(t *testing.T, s *suite, r recorder)
}

// attacks are the suite's entries, in the order.
var attacks = []attack{
	{"1", "platform-allocator-serves-tenant-token-file", attackTokenFile},
	{"2", "tenant-allocator-reaches-other-namespaces", attackGrants},
	{"3", "monitors-discover-across-tenants", attackCrossTenantDiscovery},
	{"4", "opamp-server-writes-any-field-anywhere", attackBridgeRemote},
	{"5", "cluster-wide-bridge-patches-workloads", attackBridgeRights},
	{"6", "anyone-connects-to-the-bridge-agent-server", attackBridgeProxy},
	{"7", "pod-borrows-other-namespace-injection", attackCrossNamespaceInjection},
	{"8", "labelled-configmaps-fill-operator-memory", attackConfigMapMemory},
	{"9", "collector-asks-for-kinds-tenant-may-not-create", attackKinds},
	{"10", "metrics-and-dry-run", attackMetricsAndDryRun},
}

// TestTenantAttacks runs every attack against one control plane, operator
// and (for item 1) allocator, then logs the report and writes it to
// $SHARDWISE_ATTACK_REPORT.
func TestTenantAttacks(t *testing.T) {
	requireEnv(t, "KUBEBUILDER_ASSETS", "run make test-attack, or export KUBEBUILDER_ASSETS=$(./hack/envtest.sh)")
	operatorBin := requireEnv(t, "SHARDWISE_OPERATOR_BIN", "run make test-attack, or make build and export SHARDWISE_OPERATOR_BIN=<repo>/bin/operator")
	allocatorBin := requireEnv(t, "SHARDWISE_ALLOCATOR_BIN", "run make test-attack, or make build and export SHARDWISE_ALLOCATOR_BIN=<repo>/bin/allocator")
	bridgeBin := requireEnv(t, "SHARDWISE_BRIDGE_BIN", "run make test-attack, or make build and export SHARDWISE_BRIDGE_BIN=<repo>/bin/opamp-bridge")
	s := setUp(t, operatorBin, allocatorBin)
	s.bridgeBin = bridgeBin

	for _, a := range attacks {
		// Sequential: item 8 measures the operator's memory, which the
		// others' work would blur.
		t.Run("item"+a.item+"/"+a.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					// Never a silent gap: a failed attack is a row too
					// (after the rows of its attempts that did fail).
					s.report.add(row{item: a.item, attempt: a.name, outcome: "TEST FAILED", stoppedBy: "see the test log"})
				}
			}()
			a.run(t, s, recorder{report: s.report, item: a.item})
		})
	}

	md := s.report.markdown()
	t.Log("tenant attack report:\n" + md)
	if path := os.Getenv("SHARDWISE_ATTACK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(md), 0o600); err != nil {
			t.Errorf("write the report: %v", err)
		}
	}
}

// row is one attempt of the report. Every field but item and attempt is
// what the test observed.
type row struct {
	item, attempt, outcome, stoppedBy string
}

// report collects the rows; safe for concurrent use.
type report struct {
	// operatorArgs are the operator's command line, set before any row.
	operatorArgs []string
	mu           sync.Mutex // guards rows
	rows         []row
}

func (r *report) add(x row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, x)
}

// markdown is the report as a table.
func (r *report) markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	b.WriteString("# Tenant attack report (issue 24)\n\n")
	fmt.Fprintf(&b, "The tenant `%s` may only create collectors, TargetAllocators, Instrumentations, ServiceMonitors, PodMonitors, ScrapeConfigs, Probes and pods in `%s`. The operator runs with `%s`.\n\n", tenantUser, teamA, strings.Join(r.operatorArgs, " "))
	b.WriteString("| item | attempt | outcome | what stopped it |\n|---|---|---|---|\n")
	rows := slices.Clone(r.rows)
	slices.SortStableFunc(rows, func(a, b row) int { return itemNumber(a.item) - itemNumber(b.item) })
	for _, x := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.item, cell(x.attempt), cell(x.outcome), cell(x.stoppedBy))
	}
	return b.String()
}

// itemNumber orders items numerically.
func itemNumber(item string) int {
	n, err := strconv.Atoi(item)
	if err != nil {
		return math.MaxInt
	}
	return n
}

// cell escapes a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
}

// recorder records the rows of one attack. Call it only after the
// assertions on what it records.
type recorder struct {
	report *report
	item   string
}

func (r recorder) record(attempt, outcome, stoppedBy string) {
	r.report.add(row{item: r.item, attempt: attempt, outcome: outcome, stoppedBy: stoppedBy})
}
