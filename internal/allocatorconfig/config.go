package allocatorconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	promconfig "github.com/prometheus/prometheus/config"
	"go.yaml.in/yaml/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	// Every Prometheus service discovery mechanism is available in scrape configs.
	_ "github.com/prometheus/prometheus/discovery/install"
)

// Defaults, as in the OpenTelemetry Operator's targetallocator.yaml.
const (
	// FilterRelabelConfig applies each job's relabel_configs before allocation.
	FilterRelabelConfig = "relabel-config"
	// FilterNone allocates every discovered target.
	FilterNone = "none"

	DefaultFilterStrategy               = FilterRelabelConfig
	DefaultCollectorNotReadyGracePeriod = 30 * time.Second
	DefaultCRScrapeInterval             = model.Duration(30 * time.Second)
)

// ErrConfig wraps every configuration error of this package.
var ErrConfig = errors.New("invalid allocator configuration")

// EnsureUTF8Names sets Prometheus' global label-name validation to UTF-8.
// prometheus-operator's pkg/operator switches it to the legacy scheme in its
// init, after which Prometheus' config loader refuses every config; every
// load of this package calls it, and so does whoever loads Prometheus
// configs another way. It writes the global only when it differs, so
// concurrent loads do not race once it is set (it only changes in package
// inits).
func EnsureUTF8Names() {
	//nolint:staticcheck // Prometheus' config loader still reads the global.
	if model.NameValidationScheme != model.UTF8Validation {
		model.NameValidationScheme = model.UTF8Validation //nolint:staticcheck // see above
	}
}

// Config holds the discovery keys of the allocator config file.
// Read it with ParseConfig from the whole file: yaml.v2 does not call the
// UnmarshalYAML of inline fields, so embedding it inline in a larger struct
// would lose the selectors and scrape classes.
type Config struct {
	// PromConfig is the `config:` block: a Prometheus configuration whose
	// scrape_configs are the file-configured jobs.
	PromConfig *PromConfig `yaml:"config,omitempty"`
	// FilterStrategy is FilterRelabelConfig (the default when empty) or FilterNone.
	FilterStrategy string `yaml:"filter_strategy,omitempty"`
	// PrometheusCR configures the prometheus-operator resource watcher.
	PrometheusCR PrometheusCRConfig `yaml:"prometheus_cr,omitempty"`
	// Collector selects the collectors (top-level keys of the file).
	Collector CollectorConfig `yaml:",inline"`
}

// UnmarshalYAML implements yaml.v2's Unmarshaler.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Config
	if err := unmarshal((*plain)(c)); err != nil {
		return err
	}
	var cc CollectorConfig
	if err := unmarshal(&cc); err != nil {
		return err
	}
	c.Collector = cc
	return nil
}

// CollectorConfig selects the collectors that receive targets: pods matching
// CollectorSelector in CollectorNamespace, or the static Collectors list.
type CollectorConfig struct {
	// CollectorNamespace is the namespace of the collector pods.
	CollectorNamespace string `yaml:"collector_namespace,omitempty"`
	// CollectorSelector selects the collector pods.
	CollectorSelector *metav1.LabelSelector `yaml:"-"`
	// CollectorNotReadyGracePeriod is how long a pod may be not ready and keep
	// its targets. Zero means DefaultCollectorNotReadyGracePeriod.
	CollectorNotReadyGracePeriod time.Duration `yaml:"collector_not_ready_grace_period,omitempty"`
	// Collectors is a static collector list, for runs without a cluster. When
	// set, pods are not watched.
	Collectors []StaticCollector `yaml:"collectors,omitempty"`
}

// StaticCollector is one entry of the static collector list.
type StaticCollector struct {
	Name string `yaml:"name"`
	Node string `yaml:"node,omitempty"`
}

// UnmarshalYAML implements yaml.v2's Unmarshaler: it accepts the selector in
// Kubernetes' camelCase (matchLabels) as well as lowercase.
func (c *CollectorConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var raw collectorYAML
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*c = CollectorConfig(raw.collectorPlain)
	sel, err := decodeSelector("collector_selector", raw.Selector)
	if err != nil {
		return err
	}
	c.CollectorSelector = sel
	return nil
}

// collectorYAML is CollectorConfig as written: the selector in either case.
type collectorYAML struct {
	collectorPlain `yaml:",inline"`
	Selector       any `yaml:"collector_selector,omitempty"`
}

type collectorPlain CollectorConfig

// PrometheusCRConfig is the `prometheus_cr:` block, with the keys and meaning
// of the OpenTelemetry Operator's: a nil resource selector selects nothing,
// `{}` selects all; a nil (missing or null) namespace selector means the
// allocator's own namespace, as prometheus-operator reads it. Label selectors and scrape classes use Kubernetes' JSON field names
// (matchLabels, matchExpressions; lowercase is accepted too).
type PrometheusCRConfig struct {
	Enabled         bool     `yaml:"enabled,omitempty"`
	AllowNamespaces []string `yaml:"allow_namespaces,omitempty"`
	DenyNamespaces  []string `yaml:"deny_namespaces,omitempty"`
	// SecretNamespaces, when set, are the only namespaces from which
	// referenced Secrets and ConfigMaps are read; a resource referencing one
	// elsewhere is skipped with a Warning event. Empty means each resource's
	// own namespace, as prometheus-operator reads them.
	SecretNamespaces []string `yaml:"secret_namespaces,omitempty"`

	ServiceMonitorSelector          *metav1.LabelSelector `yaml:"-"`
	ServiceMonitorNamespaceSelector *metav1.LabelSelector `yaml:"-"`
	PodMonitorSelector              *metav1.LabelSelector `yaml:"-"`
	PodMonitorNamespaceSelector     *metav1.LabelSelector `yaml:"-"`
	ProbeSelector                   *metav1.LabelSelector `yaml:"-"`
	ProbeNamespaceSelector          *metav1.LabelSelector `yaml:"-"`
	ScrapeConfigSelector            *metav1.LabelSelector `yaml:"-"`
	ScrapeConfigNamespaceSelector   *metav1.LabelSelector `yaml:"-"`

	// ScrapeInterval is the default scrape interval of generated jobs. Zero
	// means DefaultCRScrapeInterval.
	ScrapeInterval     model.Duration                `yaml:"scrape_interval,omitempty"`
	EvaluationInterval model.Duration                `yaml:"evaluation_interval,omitempty"`
	ScrapeProtocols    []monitoringv1.ScrapeProtocol `yaml:"scrape_protocols,omitempty"`
	ScrapeClasses      []monitoringv1.ScrapeClass    `yaml:"-"`
	// ServiceDiscoveryRole is the Kubernetes SD role of ServiceMonitor jobs:
	// EndpointSlice (the default when empty) or Endpoints.
	ServiceDiscoveryRole monitoringv1.ServiceDiscoveryRole `yaml:"service_discovery_role,omitempty"`
	// CRDPollInterval is how often absent CRDs are looked for. Zero means 30s.
	CRDPollInterval time.Duration `yaml:"crd_poll_interval,omitempty"`
	// DenyFSAccessThroughSMs refuses ServiceMonitors and PodMonitors that
	// read files of the collector's file system (bearerTokenFile, TLS
	// caFile/certFile/keyFile), as prometheus-operator's
	// arbitraryFSAccessThroughSMs.deny: the whole resource is skipped with a
	// Warning event (the upstream allocator drops only the endpoint).
	DenyFSAccessThroughSMs bool `yaml:"deny_fs_access_through_sms,omitempty"`

	// IgnoreNamespaceSelectors, EnforcedNamespaceLabel and the Enforced*
	// limits are prometheus-operator's multi-tenancy switches, set on the
	// Prometheus object handed to its generator (its Prometheus spec fields
	// of the same names): a monitor then discovers targets in its own
	// namespace only, every target and series carries its monitor's
	// namespace under EnforcedNamespaceLabel (after the monitor's own
	// relabelings), and no job's limits exceed the enforced ones. The
	// operator sets the first two when the allocator discovers monitors
	// outside its own namespace.
	IgnoreNamespaceSelectors      bool    `yaml:"ignore_namespace_selectors,omitempty"`
	EnforcedNamespaceLabel        string  `yaml:"enforced_namespace_label,omitempty"`
	EnforcedSampleLimit           *uint64 `yaml:"enforced_sample_limit,omitempty"`
	EnforcedTargetLimit           *uint64 `yaml:"enforced_target_limit,omitempty"`
	EnforcedLabelLimit            *uint64 `yaml:"enforced_label_limit,omitempty"`
	EnforcedLabelNameLengthLimit  *uint64 `yaml:"enforced_label_name_length_limit,omitempty"`
	EnforcedLabelValueLengthLimit *uint64 `yaml:"enforced_label_value_length_limit,omitempty"`
	// EnforcedBodySizeLimit is a size such as 10MB or 1GiB.
	EnforcedBodySizeLimit string `yaml:"enforced_body_size_limit,omitempty"`
	// ScrapeConfigAllowedSDs are the service-discovery kinds a ScrapeConfig
	// may use (ScrapeConfigSDKinds); one using another is skipped with a
	// Warning event. Empty means every kind.
	ScrapeConfigAllowedSDs []string `yaml:"scrape_config_allowed_sds,omitempty"`
}

// UnmarshalYAML implements yaml.v2's Unmarshaler.
func (c *PrometheusCRConfig) UnmarshalYAML(unmarshal func(any) error) error {
	if err := checkKeys(unmarshal, "prometheus_cr", reflect.TypeFor[PrometheusCRConfig]()); err != nil {
		return err
	}
	var raw prometheusCRYAML
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*c = PrometheusCRConfig(raw.prometheusCRPlain)
	for _, s := range []struct {
		key string
		in  any
		out **metav1.LabelSelector
	}{
		{"service_monitor_selector", raw.ServiceMonitorSelector, &c.ServiceMonitorSelector},
		{"service_monitor_namespace_selector", raw.ServiceMonitorNamespaceSelector, &c.ServiceMonitorNamespaceSelector},
		{"pod_monitor_selector", raw.PodMonitorSelector, &c.PodMonitorSelector},
		{"pod_monitor_namespace_selector", raw.PodMonitorNamespaceSelector, &c.PodMonitorNamespaceSelector},
		{"probe_selector", raw.ProbeSelector, &c.ProbeSelector},
		{"probe_namespace_selector", raw.ProbeNamespaceSelector, &c.ProbeNamespaceSelector},
		{"scrape_config_selector", raw.ScrapeConfigSelector, &c.ScrapeConfigSelector},
		{"scrape_config_namespace_selector", raw.ScrapeConfigNamespaceSelector, &c.ScrapeConfigNamespaceSelector},
	} {
		sel, err := decodeSelector(s.key, s.in)
		if err != nil {
			return err
		}
		*s.out = sel
	}
	if raw.ScrapeClasses != nil {
		if err := viaJSON(raw.ScrapeClasses, &c.ScrapeClasses); err != nil {
			return fmt.Errorf("scrape_classes: %w", err)
		}
	}
	return nil
}

// DecodeScrapeClasses reads scrape classes in Kubernetes' JSON form (a
// resource's objects), strictly; nil stays nil.
func DecodeScrapeClasses(objs []map[string]any) ([]monitoringv1.ScrapeClass, error) {
	if objs == nil {
		return nil, nil
	}
	var out []monitoringv1.ScrapeClass
	if err := viaJSON(objs, &out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return out, nil
}

// prometheusCRYAML is PrometheusCRConfig as written: selectors and scrape
// classes in Kubernetes' JSON form.
type prometheusCRYAML struct {
	prometheusCRPlain               `yaml:",inline"`
	ServiceMonitorSelector          any `yaml:"service_monitor_selector,omitempty"`
	ServiceMonitorNamespaceSelector any `yaml:"service_monitor_namespace_selector,omitempty"`
	PodMonitorSelector              any `yaml:"pod_monitor_selector,omitempty"`
	PodMonitorNamespaceSelector     any `yaml:"pod_monitor_namespace_selector,omitempty"`
	ProbeSelector                   any `yaml:"probe_selector,omitempty"`
	ProbeNamespaceSelector          any `yaml:"probe_namespace_selector,omitempty"`
	ScrapeConfigSelector            any `yaml:"scrape_config_selector,omitempty"`
	ScrapeConfigNamespaceSelector   any `yaml:"scrape_config_namespace_selector,omitempty"`
	ScrapeClasses                   any `yaml:"scrape_classes,omitempty"`
}

type prometheusCRPlain PrometheusCRConfig

// ScrapeConfigSDKinds are the service-discovery kinds of a
// prometheus-operator ScrapeConfig, as scrape_config_allowed_sds names them:
// each field of its spec without the SDConfigs (or Configs) suffix.
var ScrapeConfigSDKinds = []string{"static", "file", "http", "kubernetes", "consul", "dns", "ec2", "azure", "gce",
	"openstack", "digitalOcean", "kuma", "eureka", "docker", "linode", "hetzner", "nomad", "dockerSwarm", "puppetDB",
	"lightSail", "ovhcloud", "scaleway", "ionos"}

// byteSize is prometheus-operator's ByteSize pattern.
var byteSize = regexp.MustCompile(`^(0|([0-9]*[.])?[0-9]+((K|M|G|T|E|P)i?)?B)$`)

// Validate reports settings that can never work.
func (c *PrometheusCRConfig) Validate() error {
	if len(c.AllowNamespaces) > 0 && len(c.DenyNamespaces) > 0 {
		return fmt.Errorf("%w: prometheus_cr: only one of allow_namespaces and deny_namespaces can be set", ErrConfig)
	}
	switch c.ServiceDiscoveryRole {
	case "", monitoringv1.EndpointsRole, monitoringv1.EndpointSliceRole:
	default:
		return fmt.Errorf("%w: prometheus_cr.service_discovery_role: %q is neither Endpoints nor EndpointSlice", ErrConfig, c.ServiceDiscoveryRole)
	}
	for _, sd := range c.ScrapeConfigAllowedSDs {
		if !slices.Contains(ScrapeConfigSDKinds, sd) {
			return fmt.Errorf("%w: prometheus_cr.scrape_config_allowed_sds: unknown kind %q (known: %s)", ErrConfig, sd, strings.Join(ScrapeConfigSDKinds, ", "))
		}
	}
	if c.EnforcedBodySizeLimit != "" {
		if !byteSize.MatchString(c.EnforcedBodySizeLimit) {
			return fmt.Errorf("%w: prometheus_cr.enforced_body_size_limit: %q is not a size such as 10MB or 1GiB", ErrConfig, c.EnforcedBodySizeLimit)
		}
	}
	return nil
}

// PromConfig is the `config:` block: a Prometheus configuration parsed with
// Prometheus' own loader, so errors name the offending field and defaults
// (scrape interval, timeout, scheme, metrics path) are filled in. It keeps
// the block as written, which is what it marshals back to (Prometheus'
// marshaller would fill in defaults and hide secrets).
type PromConfig struct {
	*promconfig.Config
	written any
}

// ScrapeConfigs is a `config:` block with these scrape configs, as the
// operator renders it from its resources; Config stays nil (the allocator
// parses the file it is written to).
func ScrapeConfigs(scs []map[string]any) *PromConfig {
	if scs == nil {
		scs = []map[string]any{}
	}
	return &PromConfig{written: map[string]any{"scrape_configs": scs}}
}

// UnmarshalYAML implements yaml.v2's Unmarshaler.
func (p *PromConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var raw yaml.MapSlice
	if err := unmarshal(&raw); err != nil {
		return err
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		return err
	}
	cfg, err := LoadPromConfig(b)
	if err != nil {
		return err
	}
	p.Config, p.written = cfg, raw
	return nil
}

// MarshalYAML implements yaml.v2's Marshaler: the block as written.
func (p PromConfig) MarshalYAML() (any, error) {
	if p.written != nil {
		return p.written, nil
	}
	return p.Config, nil
}

// Prometheus returns the parsed `config:` block, nil when absent; it is what
// Manager.ApplyConfig takes.
func (c *Config) Prometheus() *promconfig.Config {
	if c == nil || c.PromConfig == nil {
		return nil
	}
	return c.PromConfig.Config
}

// LoadPromConfig parses a Prometheus configuration with UTF-8 label-name
// validation, whatever another package set the global scheme to.
func LoadPromConfig(b []byte) (*promconfig.Config, error) {
	EnsureUTF8Names()
	cfg, err := promconfig.Load(string(b), slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("%w: config: %w", ErrConfig, err)
	}
	for _, sc := range cfg.ScrapeConfigs {
		// Validate fills in the global defaults of each job.
		if err := sc.Validate(cfg.GlobalConfig); err != nil {
			return nil, fmt.Errorf("%w: config: scrape config %q: %w", ErrConfig, sc.JobName, err)
		}
	}
	return cfg, nil
}

// ParseConfig reads this package's keys from an allocator config file (the
// OpenTelemetry Operator's targetallocator.yaml); other keys are ignored.
// Defaults are applied and the result is validated.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	if err := yaml.Unmarshal(b, &c); err != nil {
		if errors.Is(err, ErrConfig) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// ApplyDefaults fills in unset settings. A missing or null namespace
// selector stays nil: like prometheus-operator for a Prometheus object, it
// selects the allocator's own namespace (the upstream allocator reads it as
// every namespace; its operator's CRD defaults the selectors to `{}`, as
// ours does, so rendered configs carry `{}`).
func (c *Config) ApplyDefaults() {
	if c.FilterStrategy == "" {
		c.FilterStrategy = DefaultFilterStrategy
	}
	if c.Collector.CollectorNotReadyGracePeriod == 0 {
		c.Collector.CollectorNotReadyGracePeriod = DefaultCollectorNotReadyGracePeriod
	}
	cr := &c.PrometheusCR
	if cr.ScrapeInterval == 0 {
		cr.ScrapeInterval = DefaultCRScrapeInterval
	}
	if cr.ServiceDiscoveryRole == "" {
		cr.ServiceDiscoveryRole = monitoringv1.EndpointSliceRole
	}
	if cr.CRDPollInterval == 0 {
		cr.CRDPollInterval = 30 * time.Second
	}
}

// Validate reports settings that can never work.
func (c *Config) Validate() error {
	switch c.FilterStrategy {
	case "", FilterRelabelConfig, FilterNone:
	default:
		return fmt.Errorf("%w: filter_strategy: unknown strategy %q (want %q or %q)", ErrConfig, c.FilterStrategy, FilterRelabelConfig, FilterNone)
	}
	if err := c.PrometheusCR.Validate(); err != nil {
		return err
	}
	names := make([]string, 0, len(c.Collector.Collectors))
	for i, col := range c.Collector.Collectors {
		if col.Name == "" {
			return fmt.Errorf("%w: collectors[%d]: name is empty", ErrConfig, i)
		}
		if slices.Contains(names, col.Name) {
			return fmt.Errorf("%w: collectors[%d]: duplicate name %q", ErrConfig, i, col.Name)
		}
		names = append(names, col.Name)
	}
	if c.Collector.CollectorNotReadyGracePeriod < 0 {
		return fmt.Errorf("%w: collector_not_ready_grace_period: negative", ErrConfig)
	}
	return nil
}

// decodeSelector converts a YAML selector, camelCase or lowercase, into a
// LabelSelector; nil stays nil (selects nothing), {} selects everything.
func decodeSelector(key string, in any) (*metav1.LabelSelector, error) {
	if in == nil {
		return nil, nil
	}
	m, ok := stringKeys(in).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: want a label selector, got %T", ErrConfig, key, in)
	}
	for lower, camel := range map[string]string{"matchlabels": "matchLabels", "matchexpressions": "matchExpressions"} {
		if v, ok := m[lower]; ok {
			if _, dup := m[camel]; !dup {
				m[camel] = v
			}
			delete(m, lower)
		}
	}
	var sel metav1.LabelSelector
	if err := viaJSON(m, &sel); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, key, err)
	}
	if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, key, err)
	}
	return &sel, nil
}

// viaJSON decodes a yaml.v2 value into a type that only has JSON tags.
func viaJSON(in, out any) error {
	b, err := json.Marshal(stringKeys(in))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// stringKeys converts yaml.v2's map[any]any trees into map[string]any.
func stringKeys(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case yaml.MapSlice:
		m := make(map[string]any, len(v))
		for _, it := range v {
			m[fmt.Sprint(it.Key)] = stringKeys(it.Value)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = stringKeys(e)
		}
		return out
	default:
		return v
	}
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
