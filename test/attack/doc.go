// Package attack is the tenant attack suite of issue 24: in one envtest
// control plane, the real operator binary (as a ServiceAccount holding
// exactly config/rbac, with the admission policy of config/policy, and
// serving the pod webhook of config/webhook, which envtest points at the
// operator's port on 127.0.0.1 with a certificate the API server trusts, so
// the API server calls the binary over TLS) and the real allocator
// binary (as the ServiceAccount the operator created for it, with the
// configuration the operator rendered) face a tenant who may only create
// collectors, TargetAllocators, Instrumentations, ServiceMonitors,
// PodMonitors, ScrapeConfigs, Probes and pods in namespace team-a. The
// tenant tries each item of the issue; every attempt must fail, and each
// subtest asserts what stopped it (an admission error, a status condition
// and a Warning event, a denied SubjectAccessReview, the allocator's served
// output, the operator's memory) and records it as a row of the report.
//
// The report is a markdown table (item, attempt, outcome, what stopped it)
// built from what the tests observed; it is logged at the end and written
// to $SHARDWISE_ATTACK_REPORT when set (make test-attack sets
// bin/attack-report.md and prints it).
//
// Items 4 to 6 (the OpAMP bridge) run the real bridge binary the same way,
// as the platform team's cluster-wide bridge, against an OpAMP server the
// attacker controls (opamp-go's, internal/bridge/opamptest).
//
// An attack is an entry of the attacks table in attack_test.go: a function
// of the shared suite that records one row per attempt.
//
// The suite needs the binaries in SHARDWISE_OPERATOR_BIN,
// SHARDWISE_ALLOCATOR_BIN and SHARDWISE_BRIDGE_BIN and KUBEBUILDER_ASSETS
// (hack/envtest.sh). Without
// them it skips, unless SHARDWISE_REQUIRE_ATTACK is set (make test-attack
// sets it), in which case it fails. SHARDWISE_ATTACK_OPERATOR_ARGS adds
// operator flags, to watch attacks succeed against a weaker configuration
// (--allow-cross-namespace-references --allow-cluster-wide-grants fails
// items 2, 7 and 10).
package attack
