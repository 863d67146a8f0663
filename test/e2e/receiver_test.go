package e2e

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// collectorFleet is one Prometheus receiver per collector id, each polling the
// allocator as a collector pod of that name would, and what they delivered.
type collectorFleet struct {
	sinks map[string]*consumertest.MetricsSink

	mu        sync.Mutex                      // guards the fields below
	processed map[string]int                  // collector -> metrics batches already read from its sink
	lastSeen  map[string]map[string]time.Time // target name -> collector -> newest scrape timestamp
	jobOf     map[string]map[string]bool      // target name -> service.name (the job) values seen
}

// startFleet creates and starts a receiver per collector id, polling the
// allocator at endpoint every second, and shuts them down at cleanup. Start
// returns after each receiver's first successful /scrape_configs poll.
func startFleet(t *testing.T, endpoint string, collectors []string) *collectorFleet {
	t.Helper()
	logs := &logBuffer{}
	dumpOnFailure(t, "receiver logs", logs)
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), logs, zapcore.InfoLevel)

	f := &collectorFleet{
		sinks:     map[string]*consumertest.MetricsSink{},
		processed: map[string]int{},
		lastSeen:  map[string]map[string]time.Time{},
		jobOf:     map[string]map[string]bool{},
	}
	for _, id := range collectors {
		sink := &consumertest.MetricsSink{}
		rcv := newReceiver(t, endpoint, id, core, sink)
		t.Cleanup(func() { stopReceiver(t, id, rcv) })
		f.sinks[id] = sink
	}
	return f
}

// newReceiver creates and starts the Prometheus receiver of collector id,
// polling the allocator at endpoint every second and delivering to sink.
func newReceiver(t *testing.T, endpoint, id string, core zapcore.Core, sink *consumertest.MetricsSink) receiver.Metrics {
	t.Helper()
	factory := prometheusreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig()
	// The same map a collector's YAML would give the receiver.
	conf := confmap.NewFromStringMap(map[string]any{
		"config": map[string]any{"scrape_configs": []any{}},
		"target_allocator": map[string]any{
			"endpoint":     endpoint,
			"interval":     scrapeInterval,
			"collector_id": id,
			// The receiver's default http_sd refresh is 30 s; a collector
			// that wants quick convergence sets it, as we do here.
			"http_sd_config": map[string]any{"refresh_interval": scrapeInterval},
		},
	})
	require.NoError(t, conf.Unmarshal(cfg), "receiver config for %s", id)
	require.NoError(t, confmap.Validate(cfg), "receiver config for %s", id)

	set := receivertest.NewNopSettings(factory.Type())
	set.ID = component.NewIDWithName(factory.Type(), id)
	set.Logger = zap.New(core).With(zap.String("collector", id))
	// The receiver scrapes with User-Agent <command>/<version>: the
	// targets tell the collectors apart by it.
	set.BuildInfo = component.BuildInfo{Command: id, Version: "e2e"}

	rcv, err := factory.CreateMetrics(t.Context(), set, cfg, sink)
	require.NoError(t, err, "create receiver for %s", id)
	require.NoError(t, startReceiver(t, rcv), "start receiver for %s", id)
	return rcv
}

// stopReceiver shuts rcv down, bounded.
func stopReceiver(t *testing.T, id string, rcv receiver.Metrics) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := rcv.Shutdown(ctx); err != nil {
		t.Errorf("shut down receiver %s: %v", id, err)
	}
}

// startReceiver starts rcv, bounded: Start blocks until the first poll of
// /scrape_configs succeeds, retrying with back-off.
func startReceiver(t *testing.T, rcv receiver.Metrics) error {
	ctx, cancel := context.WithTimeout(t.Context(), readyTimeout)
	defer cancel()
	return rcv.Start(ctx, componenttest.NewNopHost())
}

// recent reads what the receivers delivered since the last call and returns,
// per target name, the collectors that scraped it within recentScrapeWindow.
// Staleness markers (sent when a target leaves a collector) are not scrapes.
func (f *collectorFleet) recent() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, sink := range f.sinks {
		all := sink.AllMetrics()
		for _, md := range all[f.processed[id]:] {
			f.record(id, md)
		}
		f.processed[id] = len(all)
	}
	cutoff := time.Now().Add(-recentScrapeWindow)
	out := map[string][]string{}
	for name, byCollector := range f.lastSeen {
		for c, ts := range byCollector {
			if ts.After(cutoff) {
				out[name] = append(out[name], c)
			}
		}
		sort.Strings(out[name])
	}
	return out
}

// jobs returns the job names (the resource's service.name) under which each
// target's series arrived.
func (f *collectorFleet) jobs() map[string][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for name, js := range f.jobOf {
		for j := range js {
			out[name] = append(out[name], j)
		}
		slices.Sort(out[name])
	}
	return out
}

func (f *collectorFleet) record(collector string, md pmetric.Metrics) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		job := ""
		if v, ok := rm.Resource().Attributes().Get("service.name"); ok {
			job = v.Str()
		}
		sms := rm.ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				m := ms.At(k)
				if m.Name() != targetMetric || m.Type() != pmetric.MetricTypeGauge {
					continue
				}
				dps := m.Gauge().DataPoints()
				for l := range dps.Len() {
					dp := dps.At(l)
					if dp.Flags().NoRecordedValue() {
						continue
					}
					v, ok := dp.Attributes().Get("target")
					if !ok {
						continue
					}
					name := v.Str()
					if f.lastSeen[name] == nil {
						f.lastSeen[name] = map[string]time.Time{}
						f.jobOf[name] = map[string]bool{}
					}
					if ts := dp.Timestamp().AsTime(); ts.After(f.lastSeen[name][collector]) {
						f.lastSeen[name][collector] = ts
					}
					f.jobOf[name][job] = true
				}
			}
		}
	}
}
