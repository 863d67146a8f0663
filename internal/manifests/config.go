package manifests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests/container"
)

// Errors of invalid input, which no retry fixes.
var (
	// ErrInvalidConfig is a collector config the builders cannot render.
	ErrInvalidConfig = container.ErrInvalidConfig
	// ErrNoPrometheusReceiver is a collector with the allocator enabled but no
	// receiver named prometheus.
	ErrNoPrometheusReceiver = errors.New("the target allocator is enabled but config.receivers has no prometheus receiver")
	// ErrModeUnsupported is a collector mode shardwise does not implement yet.
	ErrModeUnsupported = errors.New("mode not supported by shardwise yet")
)

// prometheusReceiver is the receiver whose scrape configs move to the
// allocator, as in the upstream operator.
const prometheusReceiver = "prometheus"

// defaultReloadInterval is how often collectors poll the allocator.
const defaultReloadInterval = 30 * time.Second

// configMap converts the collector config into plain JSON values.
func configMap(cfg v1beta1.Config) (map[string]any, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	var m map[string]any
	if err := decodeJSON(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return m, nil
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

// promReceiverConfig returns the config object of the prometheus receiver
// (creating an empty one when the receiver has none), or ErrNoPrometheusReceiver.
func promReceiverConfig(cfg map[string]any) (receiver, promCfg map[string]any, err error) {
	receivers, _ := cfg["receivers"].(map[string]any)
	raw, ok := receivers[prometheusReceiver]
	if !ok {
		return nil, nil, ErrNoPrometheusReceiver
	}
	if raw == nil {
		raw = map[string]any{}
		receivers[prometheusReceiver] = raw
	}
	receiver, ok = raw.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%w: receivers.prometheus must be an object", ErrInvalidConfig)
	}
	switch c := receiver["config"].(type) {
	case nil:
		promCfg = map[string]any{}
		receiver["config"] = promCfg
	case map[string]any:
		promCfg = c
	default:
		return nil, nil, fmt.Errorf("%w: receivers.prometheus.config must be an object", ErrInvalidConfig)
	}
	return receiver, promCfg, nil
}

// ScrapeConfigs returns the scrape configs of the collector's prometheus
// receiver in Prometheus' own form: the collector escapes `$` as `$$` in
// relabel replacements (it expands environment variables), Prometheus does not.
func ScrapeConfigs(cfg v1beta1.Config) ([]v1beta1.AnyConfig, error) {
	m, err := configMap(cfg)
	if err != nil {
		return nil, err
	}
	_, promCfg, err := promReceiverConfig(m)
	if err != nil {
		return nil, err
	}
	raw, ok := promCfg["scrape_configs"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: receivers.prometheus.config.scrape_configs must be a list", ErrInvalidConfig)
	}
	out := make([]v1beta1.AnyConfig, 0, len(list))
	for i, e := range list {
		sc, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: receivers.prometheus.config.scrape_configs[%d] must be an object", ErrInvalidConfig, i)
		}
		if _, ok := sc["job_name"].(string); !ok {
			return nil, fmt.Errorf("%w: receivers.prometheus.config.scrape_configs[%d] has no job_name", ErrInvalidConfig, i)
		}
		for _, key := range []string{"relabel_configs", "metric_relabel_configs"} {
			if err := unescapeReplacements(sc[key]); err != nil {
				return nil, fmt.Errorf("%w: receivers.prometheus.config.scrape_configs[%d].%s: %w", ErrInvalidConfig, i, key, err)
			}
		}
		out = append(out, v1beta1.AnyConfig{Object: sc})
	}
	return out, nil
}

func unescapeReplacements(raw any) error {
	if raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		return errors.New("must be a list")
	}
	for _, e := range list {
		rc, ok := e.(map[string]any)
		if !ok {
			return errors.New("entries must be objects")
		}
		if r, ok := rc["replacement"].(string); ok {
			rc["replacement"] = strings.ReplaceAll(r, "$$", "$")
		}
	}
	return nil
}

// RenderCollectorConfig renders the collector's config file. With the
// allocator enabled, the prometheus receiver's scrape configs are replaced by
// a target_allocator block pointing at the allocator named taName: its HTTPS
// endpoint, with the client certificate files, when mtls is enabled.
func RenderCollectorConfig(c *v1beta1.OpenTelemetryCollector, taName string, mtls *v1beta1.TargetAllocatorMTLS) (string, error) {
	m, err := configMap(c.Spec.Config)
	if err != nil {
		return "", err
	}
	if ta := c.Spec.TargetAllocator; ta.Enabled {
		receiver, promCfg, err := promReceiverConfig(m)
		if err != nil {
			return "", err
		}
		interval := defaultReloadInterval
		if ta.CollectorTargetReloadInterval != nil {
			interval = ta.CollectorTargetReloadInterval.Duration
		}
		delete(promCfg, "scrape_configs")
		block := map[string]any{
			"endpoint":     TargetAllocatorEndpoint(taName),
			"interval":     interval.String(),
			"collector_id": "${POD_NAME}",
		}
		if mtls.IsEnabled() {
			ca, cert, key := tlsFiles()
			block["endpoint"] = TargetAllocatorHTTPSEndpoint(taName)
			block["tls"] = map[string]any{"ca_file": ca, "cert_file": cert, "key_file": key, "reload_interval": collectorTLSReload}
		}
		receiver["target_allocator"] = block
	}
	b, err := marshalYAML(m)
	if err != nil {
		return "", fmt.Errorf("render collector config: %w", err)
	}
	return string(b), nil
}

// marshalYAML renders JSON values as YAML with sorted keys, so equal configs
// render to equal bytes and hash alike.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// Hash is the hex SHA-256 of a rendered file.
func Hash(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}
