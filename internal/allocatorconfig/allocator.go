package allocatorconfig

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	commonconfig "github.com/prometheus/common/config"
	"go.yaml.in/yaml/v2"
)

// Allocator holds the allocator's own keys of the file (Config holds the
// discovery keys): listen address, allocation strategy, HTTPS, telemetry and
// shardwise's additions. The allocator decodes each key strictly.
type Allocator struct {
	ListenAddr                 string `yaml:"listen_addr,omitempty"`
	AllocationStrategy         string `yaml:"allocation_strategy,omitempty"`
	AllocationFallbackStrategy string `yaml:"allocation_fallback_strategy,omitempty"`
	AllowInsecureAuthSecrets   bool   `yaml:"allow_insecure_auth_secrets,omitempty"`
	HTTPS                      HTTPS  `yaml:"https,omitempty"`
	KubeConfigFilePath         string `yaml:"kube_config_file_path,omitempty"`
	// BalanceEpsilon is ours: the load bound of consistent-hashing, no
	// collector holds more than ceil((1+ε)·T/N) targets.
	BalanceEpsilon float64 `yaml:"balance_epsilon,omitempty"`
	// Telemetry is the upstream allocator's self-telemetry block (OTLP push
	// of its own metrics). It is parsed and validated as upstream does; the
	// metrics are served at /metrics only (see notes).
	Telemetry Telemetry `yaml:"telemetry,omitempty"`
	// EnablePprof is ours: serve /debug/pprof/ (off by default).
	EnablePprof bool `yaml:"enable_pprof,omitempty"`
	// ResponseCacheBytes is ours: the bytes of serialized target responses
	// the server keeps (server.DefaultResponseCacheBytes when zero).
	ResponseCacheBytes int64 `yaml:"response_cache_bytes,omitempty"`
	// Handoff is ours: make-before-break when a target changes collector
	// (allocation.Handoff).
	Handoff Handoff `yaml:"handoff,omitempty"`
	// Weights is ours: weights learned from the samples the collectors
	// scraped, read back from a Prometheus-compatible query API.
	Weights Weights `yaml:"weights,omitempty"`
}

// Weights is the `weights:` block (package internal/weights).
type Weights struct {
	// QueryURL is the base URL of the Prometheus-compatible API of the
	// backend the collectors send to; empty turns learning off.
	QueryURL string `yaml:"query_url,omitempty"`
	// Query returns one sample per target with its job and instance labels;
	// empty means avg_over_time(scrape_samples_scraped[15m]).
	Query string `yaml:"query,omitempty"`
	// Interval is how often it is read (5m when zero).
	Interval time.Duration `yaml:"interval,omitempty"`
	// MaxChange bounds a weight's move per refresh to a factor of
	// 1+MaxChange (0.5 when zero).
	MaxChange float64 `yaml:"max_change,omitempty"`
	// HTTPClientConfig is how the API is reached, with Prometheus' keys
	// (authorization, basic_auth, oauth2, tls_config, proxy_url,
	// http_headers, ...), as in Prometheus' remote_read: for a backend
	// behind authentication, or a multi-tenant one (http_headers:
	// {X-Scope-OrgID: {values: [tenant]}}).
	HTTPClientConfig commonconfig.HTTPClientConfig `yaml:",inline"`
}

// UnmarshalYAML implements yaml.v2's Unmarshaler: the client keys start
// from Prometheus' defaults (redirects followed, HTTP/2 on).
func (w *Weights) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Weights
	*w = Weights{HTTPClientConfig: commonconfig.DefaultHTTPClientConfig}
	return unmarshal((*plain)(w))
}

// MarshalYAML implements yaml.v2's Marshaler. A zero client config (what
// the operator fills in) writes no client keys, and the two booleans that
// hold Prometheus' defaults are left out, so what is written reads back the
// same. Secrets are written as Prometheus writes them, <secret>.
func (w Weights) MarshalYAML() (any, error) {
	type plain Weights
	b, err := yaml.Marshal(plain(w))
	if err != nil {
		return nil, err
	}
	var m yaml.MapSlice
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	bare := reflect.ValueOf(w.HTTPClientConfig).IsZero()
	client := YAMLKeys(reflect.TypeFor[commonconfig.HTTPClientConfig]())
	out := m[:0]
	for _, it := range m {
		k := fmt.Sprint(it.Key)
		switch {
		case bare && slices.Contains(client, k):
		case (k == "follow_redirects" || k == "enable_http2") && it.Value == true:
		default:
			out = append(out, it)
		}
	}
	return out, nil
}

// Handoff is the `handoff:` block: a target that moves to another
// collector is served to its previous collector too, until the new one has
// polled its job (allocation.Handoff says exactly when).
type Handoff struct {
	// Enabled is true when unset.
	Enabled *bool `yaml:"enabled,omitempty"`
	// MaxOverlap bounds how long the previous collector keeps a moved target
	// (beyond twice Settle); zero means two poll intervals of the new
	// collector, as observed.
	MaxOverlap time.Duration `yaml:"max_overlap,omitempty"`
	// Settle is how long a collector may take from a poll to scraping what
	// it returned, and how long allocator replicas behind one Service may
	// disagree: the previous collector is released Settle after the new
	// one's first poll at least Settle after the move. Zero means
	// DefaultHandoffSettle.
	Settle time.Duration `yaml:"settle,omitempty"`
}

// DefaultHandoffSettle covers the OpenTelemetry Collector's Prometheus
// receiver, which applies discovery and reloads its scrape manager at most
// every 5 s each.
const DefaultHandoffSettle = 10 * time.Second

// On reports whether the handoff is enabled.
func (h Handoff) On() bool { return h.Enabled == nil || *h.Enabled }

// Telemetry is the upstream allocator's `telemetry:` block, with the
// keys of the OpenTelemetry declarative configuration's meter provider
// (opentelemetry-operator cmd/otel-allocator/internal/config TelemetryConfig).
type Telemetry struct {
	Metrics *struct {
		Readers []struct {
			Periodic *struct {
				Interval int `yaml:"interval,omitempty"` // milliseconds
				Timeout  int `yaml:"timeout,omitempty"`  // milliseconds
				Exporter struct {
					OTLPGrpc *OTLPExporter `yaml:"otlp_grpc,omitempty"`
					OTLPHttp *OTLPExporter `yaml:"otlp_http,omitempty"`
				} `yaml:"exporter"`
			} `yaml:"periodic,omitempty"`
		} `yaml:"readers,omitempty"`
	} `yaml:"metrics,omitempty"`
}

// OTLPExporter is an OTLP metric exporter of the telemetry block; tls only
// applies to gRPC, as upstream.
type OTLPExporter struct {
	Endpoint string `yaml:"endpoint,omitempty"`
	Headers  []struct {
		Name  string  `yaml:"name"`
		Value *string `yaml:"value"`
	} `yaml:"headers,omitempty"`
	TemporalityPreference string `yaml:"temporality_preference,omitempty"`
	TLS                   *struct {
		Insecure bool `yaml:"insecure,omitempty"`
	} `yaml:"tls,omitempty"`
}

// Validate applies the upstream allocator's checks.
func (t Telemetry) Validate() error {
	if t.Metrics == nil {
		return nil
	}
	for i, r := range t.Metrics.Readers {
		if r.Periodic == nil {
			continue
		}
		at := fmt.Sprintf("telemetry.metrics.readers[%d].periodic", i)
		grpc, http := r.Periodic.Exporter.OTLPGrpc, r.Periodic.Exporter.OTLPHttp
		switch {
		case grpc == nil && http == nil:
			return fmt.Errorf("%s: must configure otlp_grpc or otlp_http exporter", at)
		case grpc != nil && http != nil:
			return fmt.Errorf("%s: otlp_grpc and otlp_http are mutually exclusive", at)
		}
		for name, e := range map[string]*OTLPExporter{"otlp_grpc": grpc, "otlp_http": http} {
			if e == nil {
				continue
			}
			if e.Endpoint == "" {
				return fmt.Errorf("%s.%s: endpoint must be set", at, name)
			}
			switch e.TemporalityPreference {
			case "", "cumulative", "delta", "low_memory":
			default:
				return fmt.Errorf("%s.%s: temporality_preference must be cumulative, delta or low_memory, got %q", at, name, e.TemporalityPreference)
			}
			if name == "otlp_http" && e.TLS != nil {
				return fmt.Errorf("%s.otlp_http: unknown key \"tls\" (only otlp_grpc has tls)", at)
			}
		}
	}
	return nil
}

// HTTPS is the `https:` block: mutual TLS for collectors that need the
// real secrets of scrape configs.
type HTTPS struct {
	Enabled         bool   `yaml:"enabled,omitempty"`
	ListenAddr      string `yaml:"listen_addr,omitempty"`
	CAFilePath      string `yaml:"ca_file_path,omitempty"`
	TLSCertFilePath string `yaml:"tls_cert_file_path,omitempty"`
	TLSKeyFilePath  string `yaml:"tls_key_file_path,omitempty"`
	// PlainHTTPAPI is ours: keep serving the target API on listen_addr
	// (plain HTTP) too, as the upstream allocator does. Off, the plain port
	// serves only health, readiness, metrics and pprof once https is on.
	PlainHTTPAPI bool `yaml:"plain_http_api,omitempty"`
}
