package relabel_test

import (
	"fmt"

	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/shardwise/shardwise/discovery/relabel"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// ExampleFilter turns target groups into targets with their identity.
func ExampleFilter() {
	cfg, _ := allocatorconfig.LoadPromConfig([]byte(`
scrape_configs:
- job_name: web
  relabel_configs:
  - {source_labels: [__meta_port], regex: metrics, action: keep}
`))
	f := relabel.NewFilter(allocatorconfig.FilterRelabelConfig)
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
