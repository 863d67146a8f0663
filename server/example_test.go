package server_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/shardwise/shardwise/allocation"
	"github.com/shardwise/shardwise/server"
)

// staticConfigs is the smallest ScrapeConfigs: a fixed, ready set.
type staticConfigs map[string]*promconfig.ScrapeConfig

func (s staticConfigs) ScrapeConfigs() (map[string]*promconfig.ScrapeConfig, bool) { return s, true }

func Example() {
	alloc, _ := allocation.New(allocation.Options{})
	alloc.SetCollectors([]allocation.Collector{{Name: "collector-0"}})
	alloc.SetJobTargets(map[string][]*allocation.Target{
		"serviceMonitor/ns/app/0": {{
			Job:     "serviceMonitor/ns/app/0",
			Hash:    1,
			Address: "10.0.0.1:8080",
			Labels:  allocation.DiscoveredOf(labels.FromStrings("__address__", "10.0.0.1:8080")),
		}},
	})

	srv, err := server.New(server.Options{
		Assignments:   alloc,
		ScrapeConfigs: staticConfigs{},
		ListenAddr:    "127.0.0.1:0",
		Logger:        slog.New(slog.DiscardHandler),
		Registerer:    prometheus.NewRegistry(),
	})
	if err != nil {
		panic(err)
	}

	// A program runs srv.Run(ctx) under its errgroup; here the handler is
	// mounted on a test server.
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/jobs/serviceMonitor%2Fns%2Fapp%2F0/targets?collector_id=collector-0")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Header.Get("Content-Type"))
	fmt.Println(string(body))
	ts.Client().CloseIdleConnections()
	// Output:
	// application/json
	// [{"targets":["10.0.0.1:8080"],"labels":{"__address__":"10.0.0.1:8080"}}]
}
