package v1beta1

// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || !has(self.useCertManager) || self.useCertManager || (has(self.tls) && has(self.tls.certificateAuthorityCertificate) && has(self.tls.serverCertificate) && has(self.tls.clientCertificate))",message="mtls with useCertManager false needs tls.certificateAuthorityCertificate, tls.serverCertificate and tls.clientCertificate"

// TargetAllocatorMTLS secures the allocator's API with mutual TLS: the
// allocator also serves over HTTPS on port 8443 (Service port 443) and
// requires a client certificate there; the collectors' prometheus receivers
// poll it with theirs. Scrape-config secrets and targets' discovered labels
// are then served only over that listener. The field names are the upstream
// OpenTelemetry Operator's.
type TargetAllocatorMTLS struct {
	// enabled turns mutual TLS between the allocator and its collectors on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// useCertManager has cert-manager issue the certificates: the operator
	// creates a self-signed Issuer, a CA Certificate, a CA Issuer and the
	// allocator's server and the collectors' client Certificates. cert-manager
	// must be installed. When false, tls names the certificates.
	// +optional
	// +kubebuilder:default:=true
	UseCertManager *bool `json:"useCertManager,omitempty"`
	// tls names user-provided certificates; used only when useCertManager is
	// false. Rotated files are picked up without a restart.
	// +optional
	TLS *TargetAllocatorTLS `json:"tls,omitempty"`
}

// TargetAllocatorTLS names the certificates of mutual TLS between the
// allocator and its collectors, in the allocator's namespace.
type TargetAllocatorTLS struct {
	// certificateAuthorityCertificate is the CA that signs both the server
	// and the client certificates.
	// +optional
	CertificateAuthorityCertificate *CAReference `json:"certificateAuthorityCertificate,omitempty"`
	// serverCertificate is the allocator's certificate and key.
	// +optional
	ServerCertificate *CertificateReference `json:"serverCertificate,omitempty"`
	// clientCertificate is the collectors' certificate and key.
	// +optional
	ClientCertificate *CertificateReference `json:"clientCertificate,omitempty"`
}

// +kubebuilder:validation:XValidation:rule="has(self.secret) != has(self.configMap)",message="set exactly one of secret or configMap"

// CAReference is a CA certificate in a Secret or a ConfigMap.
type CAReference struct {
	// secret holds the CA certificate.
	// +optional
	Secret *SecretKeySelector `json:"secret,omitempty"`
	// configMap holds the CA certificate.
	// +optional
	ConfigMap *ConfigMapKeySelector `json:"configMap,omitempty"`
}

// CertificateReference is a certificate and its private key, possibly in
// two Secrets.
type CertificateReference struct {
	// certificateSecret holds the certificate; its key defaults to tls.crt.
	CertificateSecret SecretKeySelector `json:"certificateSecret"`
	// keySecret holds the private key; its key defaults to tls.key.
	KeySecret SecretKeySelector `json:"keySecret"`
}

// SecretKeySelector is a key of a Secret in the workload's namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// key in the Secret's data; empty means the role's default (tls.crt,
	// tls.key or ca.crt).
	// +optional
	Key string `json:"key,omitempty"`
}

// ConfigMapKeySelector is a key of a ConfigMap in the workload's namespace.
type ConfigMapKeySelector struct {
	// name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// key in the ConfigMap's data.
	// +optional
	// +kubebuilder:default:="ca.crt"
	Key string `json:"key,omitempty"`
}

// IsEnabled reports whether m turns mutual TLS on; m may be nil.
func (m *TargetAllocatorMTLS) IsEnabled() bool { return m != nil && m.Enabled }

// CertManager reports whether m turns mutual TLS on with certificates from
// cert-manager (the default); m may be nil.
func (m *TargetAllocatorMTLS) CertManager() bool {
	return m.IsEnabled() && (m.UseCertManager == nil || *m.UseCertManager)
}
