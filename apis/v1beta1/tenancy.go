package v1beta1

// ScrapeConfigSD is a service-discovery kind of a prometheus-operator
// ScrapeConfig, named by its field without the SDConfigs suffix
// (httpSDConfigs: http; staticConfigs: static).
// +kubebuilder:validation:Enum=static;file;http;kubernetes;consul;dns;ec2;azure;gce;openstack;digitalOcean;kuma;eureka;docker;linode;hetzner;nomad;dockerSwarm;puppetDB;lightSail;ovhcloud;scaleway;ionos
type ScrapeConfigSD string

// PrometheusCRTenancy are prometheus-operator's multi-tenancy switches, with
// the names of its Prometheus spec, applied to the Prometheus object the
// allocator hands to prometheus-operator's config generator; and an
// allowlist of the ScrapeConfig service-discovery kinds, which
// prometheus-operator does not offer. Upstream's allocator sets none of them.
type PrometheusCRTenancy struct {
	// ignoreNamespaceSelectors makes the generator ignore the
	// namespaceSelector of ServiceMonitors, PodMonitors and Probes: each
	// discovers targets in its own namespace only. Unset, it is true when
	// the allocator discovers monitors outside its own namespace (so one
	// tenant's monitor cannot select another tenant's targets) and false
	// when it reads only its own namespace.
	// +optional
	IgnoreNamespaceSelectors *bool `json:"ignoreNamespaceSelectors,omitempty"`
	// enforcedNamespaceLabel is a label the generator sets on every target
	// and series to the namespace of the monitor that produced it, after
	// the monitor's own relabelings, so a monitor cannot relabel its
	// namespace away. Unset, it is "namespace" when the allocator discovers
	// monitors outside its own namespace and empty (none) otherwise; an
	// explicit empty string turns it off.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-zA-Z_][a-zA-Z0-9_]*)?$`
	EnforcedNamespaceLabel *string `json:"enforcedNamespaceLabel,omitempty"`
	// enforcedSampleLimit caps the sample_limit of every generated job.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnforcedSampleLimit *int64 `json:"enforcedSampleLimit,omitempty"`
	// enforcedTargetLimit caps the target_limit of every generated job.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnforcedTargetLimit *int64 `json:"enforcedTargetLimit,omitempty"`
	// enforcedLabelLimit caps the label_limit of every generated job.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnforcedLabelLimit *int64 `json:"enforcedLabelLimit,omitempty"`
	// enforcedLabelNameLengthLimit caps the label_name_length_limit of every generated job.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnforcedLabelNameLengthLimit *int64 `json:"enforcedLabelNameLengthLimit,omitempty"`
	// enforcedLabelValueLengthLimit caps the label_value_length_limit of every generated job.
	// +optional
	// +kubebuilder:validation:Minimum=0
	EnforcedLabelValueLengthLimit *int64 `json:"enforcedLabelValueLengthLimit,omitempty"`
	// enforcedBodySizeLimit caps the body_size_limit of every generated job,
	// as a size (10MB, 1GiB).
	// +optional
	// +kubebuilder:validation:Pattern=`(^0|([0-9]*[.])?[0-9]+((K|M|G|T|E|P)i?)?B)$`
	EnforcedBodySizeLimit *string `json:"enforcedBodySizeLimit,omitempty"`
	// scrapeConfigAllowedSDs are the service-discovery kinds a ScrapeConfig
	// may use. A ScrapeConfig using another kind is skipped with a Warning
	// event and counted in shardwise_allocator_invalid_resources; the others
	// keep being served. Unset, it is static, kubernetes and dns when the
	// allocator discovers monitors outside its own namespace (http would
	// make the allocator fetch any URL the ScrapeConfig names, file read
	// its own files, and the registries' and clouds' kinds call a server
	// the author names) and every kind otherwise, as upstream.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	ScrapeConfigAllowedSDs []ScrapeConfigSD `json:"scrapeConfigAllowedSDs,omitempty"`
}
