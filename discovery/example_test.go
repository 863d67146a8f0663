package discovery_test

import (
	"context"
	"fmt"
	"time"

	"github.com/shardwise/shardwise/discovery"
	"github.com/shardwise/shardwise/internal/allocatorconfig"
)

// ExampleManager runs service discovery for a static job.
func ExampleManager() {
	cfg, _ := allocatorconfig.LoadPromConfig([]byte(`
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
