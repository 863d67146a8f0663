package allocatorconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Rendered is targetallocator.yaml as the operator writes it, with the keys
// the OpenTelemetry Operator renders. The operator marshals it through JSON
// (so keys come out sorted); its tags are the keys ParseConfig and the
// allocator read (TestRenderedKeysAreRead).
type Rendered struct {
	AllocationStrategy       string `json:"allocation_strategy"`
	AllowInsecureAuthSecrets bool   `json:"allow_insecure_auth_secrets,omitempty"`
	CollectorNamespace       string `json:"collector_namespace"`
	// CollectorNotReadyGracePeriod is a Go duration string (30s, 1m0s).
	CollectorNotReadyGracePeriod string                `json:"collector_not_ready_grace_period"`
	CollectorSelector            metav1.LabelSelector  `json:"collector_selector"`
	Config                       RenderedPrometheus    `json:"config"`
	FilterStrategy               string                `json:"filter_strategy"`
	HTTPS                        *RenderedHTTPS        `json:"https,omitempty"`
	ListenAddr                   string                `json:"listen_addr"`
	PrometheusCR                 *RenderedPrometheusCR `json:"prometheus_cr,omitempty"`
	// Handoff and Weights are shardwise's, rendered only when the
	// TargetAllocator's annotations set them.
	Handoff *RenderedHandoff `json:"handoff,omitempty"`
	Weights *RenderedWeights `json:"weights,omitempty"`
}

// RenderedHandoff is the `handoff:` block.
type RenderedHandoff struct {
	Enabled *bool `json:"enabled,omitempty"`
	// Settle is a Go duration string.
	Settle string `json:"settle,omitempty"`
}

// RenderedWeights is the `weights:` block.
type RenderedWeights struct {
	QueryURL string `json:"query_url"`
}

// RenderedPrometheus is the `config:` block: the scrape configs as the CRs
// hold them (Prometheus' loader reads them on the allocator's side).
type RenderedPrometheus struct {
	ScrapeConfigs []map[string]any `json:"scrape_configs"`
}

// RenderedHTTPS is the `https:` block.
type RenderedHTTPS struct {
	CAFilePath      string `json:"ca_file_path"`
	Enabled         bool   `json:"enabled"`
	ListenAddr      string `json:"listen_addr"`
	TLSCertFilePath string `json:"tls_cert_file_path"`
	TLSKeyFilePath  string `json:"tls_key_file_path"`
}

// RenderedPrometheusCR is the `prometheus_cr:` block; a nil selector is not
// rendered (it selects nothing), `{}` selects all.
type RenderedPrometheusCR struct {
	AllowNamespaces                 []string              `json:"allow_namespaces,omitempty"`
	DenyFSAccessThroughSMs          bool                  `json:"deny_fs_access_through_sms,omitempty"`
	DenyNamespaces                  []string              `json:"deny_namespaces,omitempty"`
	Enabled                         bool                  `json:"enabled"`
	EnforcedBodySizeLimit           string                `json:"enforced_body_size_limit,omitempty"`
	EnforcedLabelLimit              *uint64               `json:"enforced_label_limit,omitempty"`
	EnforcedLabelNameLengthLimit    *uint64               `json:"enforced_label_name_length_limit,omitempty"`
	EnforcedLabelValueLengthLimit   *uint64               `json:"enforced_label_value_length_limit,omitempty"`
	EnforcedNamespaceLabel          string                `json:"enforced_namespace_label,omitempty"`
	EnforcedSampleLimit             *uint64               `json:"enforced_sample_limit,omitempty"`
	EnforcedTargetLimit             *uint64               `json:"enforced_target_limit,omitempty"`
	EvaluationInterval              string                `json:"evaluation_interval,omitempty"`
	IgnoreNamespaceSelectors        bool                  `json:"ignore_namespace_selectors,omitempty"`
	PodMonitorNamespaceSelector     *metav1.LabelSelector `json:"pod_monitor_namespace_selector,omitempty"`
	PodMonitorSelector              *metav1.LabelSelector `json:"pod_monitor_selector,omitempty"`
	ProbeNamespaceSelector          *metav1.LabelSelector `json:"probe_namespace_selector,omitempty"`
	ProbeSelector                   *metav1.LabelSelector `json:"probe_selector,omitempty"`
	ScrapeClasses                   []map[string]any      `json:"scrape_classes,omitempty"`
	ScrapeConfigAllowedSDs          []string              `json:"scrape_config_allowed_sds,omitempty"`
	ScrapeConfigNamespaceSelector   *metav1.LabelSelector `json:"scrape_config_namespace_selector,omitempty"`
	ScrapeConfigSelector            *metav1.LabelSelector `json:"scrape_config_selector,omitempty"`
	ScrapeInterval                  string                `json:"scrape_interval,omitempty"`
	ScrapeProtocols                 []string              `json:"scrape_protocols,omitempty"`
	SecretNamespaces                []string              `json:"secret_namespaces,omitempty"`
	ServiceMonitorNamespaceSelector *metav1.LabelSelector `json:"service_monitor_namespace_selector,omitempty"`
	ServiceMonitorSelector          *metav1.LabelSelector `json:"service_monitor_selector,omitempty"`
}
