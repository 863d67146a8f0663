package manifests

import (
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1beta1"
)

// Mutual TLS between the allocator and its collectors (spec.mtls), laid out
// as the upstream operator does: each side mounts a kubernetes.io/tls-shaped
// Secret (ca.crt, tls.crt, tls.key) at TLSDir; the allocator serves HTTPS on
// TargetAllocatorHTTPSPort (Service port TargetAllocatorHTTPSSvcPort).
const (
	TLSDir                      = "/tls"
	TLSCAFile                   = "ca.crt"
	TLSCertFile                 = "tls.crt"
	TLSKeyFile                  = "tls.key"
	TargetAllocatorHTTPSPort    = 8443
	TargetAllocatorHTTPSSvcPort = 443
	allocatorTLSVolume          = "ta-server-tls"
	collectorTLSVolume          = "ta-client-tls"
	// collectorTLSReload is how often the collectors re-read their client
	// certificate, as upstream sets it.
	collectorTLSReload = "5m"
)

// Validity of the certificates cert-manager issues, as upstream: leaves for
// 90 days (renewed at two thirds), the CA for 720 days, renewed 181 days
// before expiry so that a renewal never coincides with a leaf's.
const (
	leafCertDuration  = 90 * 24 * time.Hour
	caCertDuration    = 8 * leafCertDuration
	caCertRenewBefore = 2*leafCertDuration + 24*time.Hour
)

// CertManagerGroupVersion is the API of the Issuer and Certificate objects
// built for spec.mtls with useCertManager.
var CertManagerGroupVersion = schema.GroupVersion{Group: "cert-manager.io", Version: "v1"}

// ErrInvalidMTLS is an mtls block the builders cannot serve.
var ErrInvalidMTLS = errors.New("invalid mtls")

// SelfSignedIssuerName is the Issuer of the CA certificate of the allocator
// named taName.
func SelfSignedIssuerName(taName string) string { return dnsName(taName, "-self-signed-issuer") }

// CAIssuerName is the Issuer of the allocator's leaf certificates.
func CAIssuerName(taName string) string { return dnsName(taName, "-ca-issuer") }

// CACertificateName is the CA Certificate and its Secret.
func CACertificateName(taName string) string { return dnsName(taName, "-ca-cert") }

// ServerCertificateName is the allocator's Certificate and its Secret.
func ServerCertificateName(taName string) string { return dnsName(taName, "-ta-server-cert") }

// ClientCertificateName is the collectors' Certificate and its Secret.
func ClientCertificateName(taName string) string { return dnsName(taName, "-ta-client-cert") }

// TargetAllocatorHTTPSEndpoint is the URL the collectors poll with mutual TLS.
func TargetAllocatorHTTPSEndpoint(taName string) string {
	return fmt.Sprintf("https://%s:%d", TargetAllocatorName(taName), TargetAllocatorHTTPSSvcPort)
}

// validateMTLS checks what the schema checks too, for objects that did not
// come through the API server.
func validateMTLS(m *v1beta1.TargetAllocatorMTLS) error {
	if !m.IsEnabled() || m.CertManager() {
		return nil
	}
	t := m.TLS
	if t == nil || t.CertificateAuthorityCertificate == nil || t.ServerCertificate == nil || t.ClientCertificate == nil {
		return fmt.Errorf("%w: with useCertManager false, tls.certificateAuthorityCertificate, tls.serverCertificate and tls.clientCertificate are required", ErrInvalidMTLS)
	}
	ca := t.CertificateAuthorityCertificate
	if (ca.Secret == nil) == (ca.ConfigMap == nil) {
		return fmt.Errorf("%w: tls.certificateAuthorityCertificate must set exactly one of secret or configMap", ErrInvalidMTLS)
	}
	for _, sel := range []*v1beta1.SecretKeySelector{ca.Secret, &t.ServerCertificate.CertificateSecret, &t.ServerCertificate.KeySecret, &t.ClientCertificate.CertificateSecret, &t.ClientCertificate.KeySecret} {
		if sel != nil && sel.Name == "" {
			return fmt.Errorf("%w: a secret reference has no name", ErrInvalidMTLS)
		}
	}
	if ca.ConfigMap != nil && ca.ConfigMap.Name == "" {
		return fmt.Errorf("%w: tls.certificateAuthorityCertificate.configMap has no name", ErrInvalidMTLS)
	}
	return nil
}

// certManagerObjects are the cert-manager objects of an allocator's mutual
// TLS, as unstructured objects (shardwise does not link cert-manager's Go
// API): a self-signed Issuer that issues the CA Certificate, a CA Issuer
// backed by the CA's Secret, and the allocator's server and the collectors'
// client Certificates, both valid for the allocator Service's names.
func certManagerObjects(ns, taName string) []client.Object {
	svc := TargetAllocatorName(taName)
	dnsNames := []any{svc, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
	subject := map[string]any{"organizationalUnits": []any{"shardwise-operator"}}
	obj := func(kind, name string, spec map[string]any) client.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(CertManagerGroupVersion.WithKind(kind))
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetLabels(Labels(ns, taName, ComponentTargetAllocator, name))
		return u
	}
	issuer := func(name string) map[string]any { return map[string]any{"kind": "Issuer", "name": name} }
	leaf := func(name string) client.Object {
		return obj("Certificate", name, map[string]any{
			"secretName": name,
			"issuerRef":  issuer(CAIssuerName(taName)),
			"dnsNames":   dnsNames,
			"duration":   leafCertDuration.String(),
			"usages":     []any{"client auth", "server auth"},
			"subject":    subject,
		})
	}
	ca := CACertificateName(taName)
	return []client.Object{
		obj("Issuer", SelfSignedIssuerName(taName), map[string]any{"selfSigned": map[string]any{}}),
		obj("Certificate", ca, map[string]any{
			"isCA":        true,
			"commonName":  ca,
			"secretName":  ca,
			"issuerRef":   issuer(SelfSignedIssuerName(taName)),
			"duration":    caCertDuration.String(),
			"renewBefore": caCertRenewBefore.String(),
			"subject":     subject,
		}),
		obj("Issuer", CAIssuerName(taName), map[string]any{"ca": map[string]any{"secretName": ca}}),
		leaf(ServerCertificateName(taName)),
		leaf(ClientCertificateName(taName)),
	}
}

// tlsVolume is the volume of one side's certificates, laid out as TLSCAFile,
// TLSCertFile and TLSKeyFile: the Secret cert-manager fills (certSecret), or
// a projection of the user's Secrets and ConfigMap. Neither uses subPath, so
// rotated certificates reach the running pods.
func tlsVolume(name string, m *v1beta1.TargetAllocatorMTLS, certSecret string, leaf func(*v1beta1.TargetAllocatorTLS) *v1beta1.CertificateReference) corev1.Volume {
	if m.CertManager() {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: certSecret}}}
	}
	or := func(key, def string) string {
		if key == "" {
			return def
		}
		return key
	}
	var sources []corev1.VolumeProjection
	// secret adds key as file to the projection of the Secret name, one
	// projection per Secret.
	secret := func(name, key, file string) {
		item := corev1.KeyToPath{Key: key, Path: file}
		for i := range sources {
			if s := sources[i].Secret; s != nil && s.Name == name {
				s.Items = append(s.Items, item)
				return
			}
		}
		sources = append(sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: []corev1.KeyToPath{item},
		}})
	}
	ca := m.TLS.CertificateAuthorityCertificate
	if ca.Secret != nil {
		secret(ca.Secret.Name, or(ca.Secret.Key, TLSCAFile), TLSCAFile)
	} else {
		sources = append(sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMap.Name},
			Items:                []corev1.KeyToPath{{Key: or(ca.ConfigMap.Key, TLSCAFile), Path: TLSCAFile}},
		}})
	}
	ref := leaf(m.TLS)
	secret(ref.CertificateSecret.Name, or(ref.CertificateSecret.Key, TLSCertFile), TLSCertFile)
	secret(ref.KeySecret.Name, or(ref.KeySecret.Key, TLSKeyFile), TLSKeyFile)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

func serverCert(t *v1beta1.TargetAllocatorTLS) *v1beta1.CertificateReference {
	return t.ServerCertificate
}
func clientCert(t *v1beta1.TargetAllocatorTLS) *v1beta1.CertificateReference {
	return t.ClientCertificate
}

// tlsMount mounts a tlsVolume at TLSDir.
func tlsMount(name string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, MountPath: TLSDir, ReadOnly: true}
}

// tlsFiles are the paths of the mounted files, in the order CA, certificate, key.
func tlsFiles() (ca, cert, key string) {
	return path.Join(TLSDir, TLSCAFile), path.Join(TLSDir, TLSCertFile), path.Join(TLSDir, TLSKeyFile)
}
