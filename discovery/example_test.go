package discovery_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/shardwise/shardwise/discovery"
)

// ExampleParseConfig reads the discovery keys of a targetallocator.yaml.
func ExampleParseConfig() {
	cfg, err := discovery.ParseConfig([]byte(`
allocation_strategy: consistent-hashing
collector_namespace: otel
collector_selector:
  matchLabels: {app.kubernetes.io/component: opentelemetry-collector}
prometheus_cr:
  enabled: true
  service_monitor_selector: {}
config:
  scrape_configs:
  - job_name: node
    static_configs: [{targets: ["node-exporter:9100"]}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Collector.CollectorNamespace, cfg.Collector.CollectorNotReadyGracePeriod, cfg.FilterStrategy)
	fmt.Println(cfg.PromConfig.ScrapeConfigs[0].JobName, cfg.PromConfig.ScrapeConfigs[0].ScrapeInterval)
	fmt.Println(cfg.PrometheusCR.ServiceDiscoveryRole, cfg.PrometheusCR.PodMonitorSelector == nil)
	// Output:
	// otel 30s relabel-config
	// node 1m
	// EndpointSlice true
}

// ExampleFilter turns target groups into targets with their identity.
func ExampleFilter() {
	cfg, _ := discovery.LoadPromConfig([]byte(`
scrape_configs:
- job_name: web
  relabel_configs:
  - {source_labels: [__meta_port], regex: metrics, action: keep}
`))
	f := discovery.NewFilter(discovery.FilterRelabelConfig)
	f.ApplyConfig(map[string]*promconfig.ScrapeConfig{"web": cfg.ScrapeConfigs[0]})
	targets := f.Process(map[string][]*targetgroup.Group{"web": {{
		Source: "example",
		Labels: model.LabelSet{"__meta_port": "metrics"},
		Targets: []model.LabelSet{
			{"__address__": "10.0.0.1:8080"},
			{"__address__": "10.0.0.1:80", "__meta_port": "http"},
		},
	}}})
	for _, t := range targets["web"] {
		fmt.Println(t.Job, t.Address, t.Labels)
	}
	// Output:
	// web 10.0.0.1:8080 {__address__="10.0.0.1:8080", __meta_port="metrics"}
}

// ExampleManager runs service discovery for a static job.
func ExampleManager() {
	cfg, _ := discovery.LoadPromConfig([]byte(`
scrape_configs:
- job_name: node
  static_configs: [{targets: ["a:9100", "b:9100"]}]
`))
	m, err := discovery.NewManager(discovery.ManagerOptions{CoalesceInterval: 10 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.ApplyConfig(cfg); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { _ = m.Run(ctx) }()
	u := <-m.Updates()
	fmt.Println(len(u.ScrapeConfigs), len(u.Targets["node"]))
	cancel()
	for range m.Updates() { // drained and closed by Run
	}
	// Output: 1 2
}
