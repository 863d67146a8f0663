package allocatorconfig_test

import (
	"fmt"

	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// ExampleParseConfig reads the discovery keys of a targetallocator.yaml.
func ExampleParseConfig() {
	cfg, err := allocatorconfig.ParseConfig([]byte(`
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
