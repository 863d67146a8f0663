// Package fleet generates a synthetic Kubernetes fleet for the pipeline
// benchmarks: scrape jobs as prometheus-operator generates them for
// ServiceMonitors (endpointslice role, sharding rule included) and the target
// groups Kubernetes service discovery sends for them, one group per
// EndpointSlice of up to 100 endpoints and about 40 meta labels per target.
//
// Everything is a pure function of (targets, jobs, generation), so the
// benchmark, the consistency test and the whole-process load test see the
// same fleet. Some discovered targets are dropped by the jobs' relabeling, as
// in a real cluster: every 20th endpoint is on the Service's "http" port (the
// ServiceMonitor keeps "metrics") and every 50th pod has completed (phase
// Succeeded, dropped). Kept reports which.
package fleet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"
)

// SliceSize is the number of endpoints per EndpointSlice, Kubernetes' default.
const SliceSize = 100

// podsPerNode is the kubelet's default pod limit.
const podsPerNode = 110

// Fleet is a set of jobs and their targets.
type Fleet struct {
	Jobs  []Job
	nodes int
}

// Job is one ServiceMonitor endpoint: a Service whose endpoints are the
// job's discovered targets.
type Job struct {
	// Name is the job name prometheus-operator gives it: serviceMonitor/<namespace>/<service>/0.
	Name      string
	Namespace string
	Service   string
	// Targets is the number of discovered targets, dropped ones included.
	Targets int

	index int
	first int // fleet-wide index of the job's first target: addresses are unique
	nodes int
}

// New returns a fleet of targets discovered targets spread over jobs jobs
// (the first jobs get one more when they do not divide evenly).
func New(targets, jobs int) *Fleet {
	if jobs < 1 {
		jobs = 1
	}
	f := &Fleet{nodes: max(3, targets/podsPerNode)}
	first := 0
	for j := range jobs {
		n := targets / jobs
		if j < targets%jobs {
			n++
		}
		ns := fmt.Sprintf("team-%02d", j%20)
		svc := fmt.Sprintf("%s-%03d", services[j%len(services)], j)
		f.Jobs = append(f.Jobs, Job{
			Name:      fmt.Sprintf("serviceMonitor/%s/%s/0", ns, svc),
			Namespace: ns,
			Service:   svc,
			Targets:   n,
			index:     j,
			first:     first,
			nodes:     f.nodes,
		})
		first += n
	}
	return f
}

var services = []string{"checkout", "payments", "catalog", "search", "cart", "frontend", "orders", "shipping", "auth", "recommendations"}

// Targets returns the number of discovered targets.
func (f *Fleet) Targets() int {
	n := 0
	for _, j := range f.Jobs {
		n += j.Targets
	}
	return n
}

// Kept returns the number of targets the jobs' relabeling keeps.
func (f *Fleet) Kept() int {
	n := 0
	for _, j := range f.Jobs {
		for i := range j.Targets {
			if Kept(i) {
				n++
			}
		}
	}
	return n
}

// Groups returns every job's target groups at generation 0, keyed by job name.
func (f *Fleet) Groups() map[string][]*targetgroup.Group {
	out := make(map[string][]*targetgroup.Group, len(f.Jobs))
	for _, j := range f.Jobs {
		out[j.Name] = j.Groups(0)
	}
	return out
}

// Kept reports whether the i-th target of a job survives the job's
// relabeling: the "http" port (i%20 == 7) and completed pods (i%50 == 13)
// are dropped.
func Kept(i int) bool { return !droppedPort(i) && !completed(i) }

func droppedPort(i int) bool { return i%20 == 7 }
func completed(i int) bool   { return i%50 == 13 }

// Groups returns the job's target groups at generation gen. Generation 0 is
// the initial state; in every later generation a rolling update has
// replaced every tenth pod (i%10 == 0) with a new one (new name, address and
// uid), so two generations > 0 differ in those pods and agree on the rest.
func (j Job) Groups(gen int) []*targetgroup.Group {
	var tgs []*targetgroup.Group
	for start, s := 0, 0; start < j.Targets; start, s = start+SliceSize, s+1 {
		slice := fmt.Sprintf("%s-%s", j.Service, suffix(uint64(j.index)*1000+uint64(s)))
		tg := &targetgroup.Group{
			Source: fmt.Sprintf("endpointslice/%s/%s", j.Namespace, slice),
			Labels: j.groupLabels(slice),
		}
		end := min(j.Targets, start+SliceSize)
		tg.Targets = make([]model.LabelSet, 0, end-start)
		for i := start; i < end; i++ {
			tg.Targets = append(tg.Targets, j.target(i, gen))
		}
		tgs = append(tgs, tg)
	}
	return tgs
}

// Discovered returns the job's targets at generation gen as Prometheus
// hands them to relabeling: group labels merged with target labels (target
// wins), keyed by __address__, each with whether it is kept.
func (j Job) Discovered(gen int) map[string]Target {
	out := make(map[string]Target, j.Targets)
	i := 0
	for _, tg := range j.Groups(gen) {
		for _, tl := range tg.Targets {
			ls := tg.Labels.Clone()
			for k, v := range tl {
				ls[k] = v
			}
			out[string(tl[model.AddressLabel])] = Target{Labels: ls, Kept: Kept(i)}
			i++
		}
	}
	return out
}

// Target is one discovered target.
type Target struct {
	Labels model.LabelSet
	Kept   bool
}

func (j Job) groupLabels(slice string) model.LabelSet {
	return model.LabelSet{
		"__meta_kubernetes_namespace":                                                  lv(j.Namespace),
		"__meta_kubernetes_endpointslice_name":                                         lv(slice),
		"__meta_kubernetes_endpointslice_address_type":                                 "IPv4",
		"__meta_kubernetes_endpointslice_label_kubernetes_io_service_name":             lv(j.Service),
		"__meta_kubernetes_endpointslice_labelpresent_kubernetes_io_service_name":      "true",
		"__meta_kubernetes_endpointslice_label_endpointslice_kubernetes_io_managed_by": "endpointslice-controller.k8s.io",
		"__meta_kubernetes_service_name":                                               lv(j.Service),
		"__meta_kubernetes_service_label_app_kubernetes_io_name":                       lv(j.Service),
		"__meta_kubernetes_service_labelpresent_app_kubernetes_io_name":                "true",
	}
}

// target returns the labels of the i-th endpoint of the job at generation gen.
func (j Job) target(i, gen int) model.LabelSet {
	g := j.first + i // fleet-wide index
	hash, podID, ip := "7d9f8c6b5", uint64(g), podIP(g)
	if gen > 0 && i%10 == 0 {
		// Replaced by the rolling update of generation gen.
		hash, podID = "5c4b8f7d6", uint64(g)<<20|uint64(gen)
		ip = fmt.Sprintf("10.%d.%d.%d", 128+gen%64, i>>8&255, i&255)
	}
	pod := j.Service + "-" + hash + "-" + suffix(podID)
	node := j.node(g)
	port, portName := "8080", "metrics"
	if droppedPort(i) {
		port, portName = "8081", "http"
	}
	phase, ready := "Running", "true"
	if completed(i) {
		phase, ready = "Succeeded", "false"
	}
	return model.LabelSet{
		model.AddressLabel: lv(ip + ":" + port),
		"__meta_kubernetes_endpointslice_address_target_kind":                       "Pod",
		"__meta_kubernetes_endpointslice_address_target_name":                       lv(pod),
		"__meta_kubernetes_endpointslice_endpoint_conditions_ready":                 lv(ready),
		"__meta_kubernetes_endpointslice_endpoint_conditions_serving":               lv(ready),
		"__meta_kubernetes_endpointslice_endpoint_conditions_terminating":           "false",
		"__meta_kubernetes_endpointslice_endpoint_node_name":                        lv(node),
		"__meta_kubernetes_endpointslice_endpoint_zone":                             lv(zones[g%len(zones)]),
		"__meta_kubernetes_endpointslice_port":                                      lv(port),
		"__meta_kubernetes_endpointslice_port_name":                                 lv(portName),
		"__meta_kubernetes_endpointslice_port_protocol":                             "TCP",
		"__meta_kubernetes_pod_name":                                                lv(pod),
		"__meta_kubernetes_pod_ip":                                                  lv(ip),
		"__meta_kubernetes_pod_uid":                                                 lv(fmt.Sprintf("%08x-0000-4000-8000-%012x", j.index, podID)),
		"__meta_kubernetes_pod_node_name":                                           lv(node),
		"__meta_kubernetes_pod_host_ip":                                             lv(j.hostIP(g)),
		"__meta_kubernetes_pod_phase":                                               lv(phase),
		"__meta_kubernetes_pod_ready":                                               lv(ready),
		"__meta_kubernetes_pod_controller_kind":                                     "ReplicaSet",
		"__meta_kubernetes_pod_controller_name":                                     lv(j.Service + "-" + hash),
		"__meta_kubernetes_pod_container_name":                                      lv(j.Service),
		"__meta_kubernetes_pod_container_image":                                     lv("registry.example.com/shop/" + j.Service + ":1.24." + strconv.Itoa(j.index%7)),
		"__meta_kubernetes_pod_container_port_name":                                 lv(portName),
		"__meta_kubernetes_pod_container_port_number":                               lv(port),
		"__meta_kubernetes_pod_container_port_protocol":                             "TCP",
		"__meta_kubernetes_pod_label_app_kubernetes_io_name":                        lv(j.Service),
		"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name":                 "true",
		"__meta_kubernetes_pod_label_app_kubernetes_io_version":                     lv("1.24." + strconv.Itoa(j.index%7)),
		"__meta_kubernetes_pod_labelpresent_app_kubernetes_io_version":              "true",
		"__meta_kubernetes_pod_label_pod_template_hash":                             lv(hash),
		"__meta_kubernetes_pod_labelpresent_pod_template_hash":                      "true",
		"__meta_kubernetes_pod_annotation_kubectl_kubernetes_io_restartedAt":        "2026-01-12T09:30:00Z",
		"__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_restartedAt": "true",
	}
}

var zones = []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}

func lv(s string) model.LabelValue { return model.LabelValue(s) }

// podIP returns a unique IPv4 address for fleet-wide target g (< 2^23).
func podIP(g int) string {
	return fmt.Sprintf("10.%d.%d.%d", g>>16&127, g>>8&255, g&255)
}

func (j Job) node(g int) string {
	n := g % j.nodes
	return fmt.Sprintf("ip-192-168-%d-%d.eu-west-1.compute.internal", n>>8&255, n&255)
}

func (j Job) hostIP(g int) string {
	n := g % j.nodes
	return fmt.Sprintf("192.168.%d.%d", n>>8&255, n&255)
}

// suffix returns a five-character, Kubernetes-style random-looking name suffix.
func suffix(x uint64) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	x = x*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	x ^= x >> 29
	var b [5]byte
	for i := range b {
		b[i] = alphabet[x%uint64(len(alphabet))]
		x /= uint64(len(alphabet))
	}
	return string(b[:])
}

// SD selects the service discovery block of generated scrape configs.
type SD func(j Job) string

// KubernetesSD discovers the job's EndpointSlices in its namespace, as
// prometheus-operator configures a ServiceMonitor (the benchmark never runs
// it: it hands the groups to the filter itself).
func KubernetesSD(j Job) string {
	return fmt.Sprintf(`    kubernetes_sd_configs:
      - role: endpointslice
        namespaces:
          names: [%s]
`, j.Namespace)
}

// FileSD reads the job's targets from file, relative to the config file.
func FileSD(file func(j Job) string) SD {
	return func(j Job) string {
		return fmt.Sprintf(`    file_sd_configs:
      - files: [%q]
`, file(j))
	}
}

// ScrapeConfigs returns the `scrape_configs:` list of a Prometheus config
// (indented for the top level), one job per Job with the relabel_configs
// prometheus-operator v0.85 generates for a ServiceMonitor endpoint with
// jobLabel, podTargetLabels and shards.
func (f *Fleet) ScrapeConfigs(sd SD) string {
	var b strings.Builder
	b.WriteString("scrape_configs:\n")
	for _, j := range f.Jobs {
		fmt.Fprintf(&b, "  - job_name: %q\n", j.Name)
		b.WriteString("    honor_labels: false\n    honor_timestamps: true\n    scrape_interval: 30s\n    scrape_timeout: 10s\n    metrics_path: /metrics\n    scheme: http\n")
		b.WriteString(sd(j))
		fmt.Fprintf(&b, relabelConfigs, j.Service)
	}
	return b.String()
}

// relabelConfigs is what prometheus-operator generates for a ServiceMonitor
// selecting app.kubernetes.io/name=%s, port "metrics", jobLabel
// app.kubernetes.io/name, podTargetLabels [app.kubernetes.io/version], with
// its sharding rule.
const relabelConfigs = `    relabel_configs:
      - source_labels: [job]
        target_label: __tmp_prometheus_job_name
      - action: keep
        source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_name, __meta_kubernetes_service_labelpresent_app_kubernetes_io_name]
        regex: (%s);true
      - action: keep
        source_labels: [__meta_kubernetes_endpointslice_port_name]
        regex: metrics
      - source_labels: [__meta_kubernetes_endpointslice_address_target_kind, __meta_kubernetes_endpointslice_address_target_name]
        separator: ;
        regex: Node;(.*)
        replacement: ${1}
        target_label: node
      - source_labels: [__meta_kubernetes_endpointslice_address_target_kind, __meta_kubernetes_endpointslice_address_target_name]
        separator: ;
        regex: Pod;(.*)
        replacement: ${1}
        target_label: pod
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_service_name]
        target_label: service
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_container_name]
        target_label: container
      - action: drop
        source_labels: [__meta_kubernetes_pod_phase]
        regex: (Failed|Succeeded)
      - source_labels: [__meta_kubernetes_service_name]
        target_label: job
        replacement: ${1}
      - source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_name]
        target_label: job
        regex: (.+)
        replacement: ${1}
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_version]
        target_label: version
        regex: (.+)
        replacement: ${1}
      - target_label: endpoint
        replacement: metrics
      - source_labels: [__address__, __tmp_hash]
        regex: (.+);
        target_label: __tmp_hash
        action: replace
      - source_labels: [__tmp_hash]
        target_label: __tmp_hash
        modulus: 4
        action: hashmod
      - source_labels: [__tmp_hash, __tmp_disable_sharding]
        regex: $(SHARD);|.+;.+
        action: keep
`
