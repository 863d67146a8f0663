package manifests_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gotest.tools/v3/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/apis/v1beta1"
	"github.com/shardwise/shardwise/internal/manifests"
)

// mtlsExample is the upstream example with mutual TLS from cert-manager, as
// an upstream manifest writes it.
var mtlsExample = strings.Replace(upstreamExample, "    filterStrategy: relabel-config\n", "    filterStrategy: relabel-config\n    mtls:\n      enabled: true\n", 1)

// mtlsUserExample names user-provided certificates instead.
var mtlsUserExample = strings.Replace(upstreamExample, "    filterStrategy: relabel-config\n", `    filterStrategy: relabel-config
    mtls:
      enabled: true
      useCertManager: false
      tls:
        certificateAuthorityCertificate:
          configMap: {name: ta-ca, key: root.pem}
        serverCertificate:
          certificateSecret: {name: ta-server}
          keySecret: {name: ta-server}
        clientCertificate:
          certificateSecret: {name: ta-client, key: cert.pem}
          keySecret: {name: ta-client-key, key: key.pem}
`, 1)

// TestMTLSGolden renders both sides of mutual TLS: the collector's HTTPS
// endpoint, tls block and client-certificate volume; the allocator's https
// config, port, Service port, server-certificate volume and, with
// cert-manager, the Issuers and Certificates.
func TestMTLSGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc string }{
		{"mtls-cert-manager", mtlsExample},
		{"mtls-user-provided", mtlsUserExample},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := manifests.BuildCollector(decodeCollector(t, tc.doc), settings, nil)
			require.NoError(t, err)
			golden.Assert(t, render(t, c.Objects), "collector-"+tc.name+".golden.yaml")
			ta := allocatorFromExample(t, tc.doc)
			require.True(t, ta.Spec.Mtls.IsEnabled(), "the owned TargetAllocator carries mtls")
			sel := manifests.SelectorLabels(ta.Namespace, ta.Name, manifests.ComponentCollector)
			got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta, CollectorSelector: sel}, settings)
			require.NoError(t, err)
			golden.Assert(t, render(t, got.Objects), "targetallocator-"+tc.name+".golden.yaml")
		})
	}
}

// TestMTLSCollectorAndAllocatorAgree checks what makes the two sides meet:
// the collector polls the allocator Service's HTTPS port with the files its
// volume holds; the allocator serves the port its Service targets with the
// files of its volume; with cert-manager, each volume is the Secret of a
// Certificate valid for the name the collector dials.
func TestMTLSCollectorAndAllocatorAgree(t *testing.T) {
	t.Parallel()
	c, err := manifests.BuildCollector(decodeCollector(t, mtlsExample), settings, nil)
	require.NoError(t, err)
	rendered, err := manifests.RenderCollectorConfig(decodeCollector(t, mtlsExample), "collector-with-ta", &v1beta1.TargetAllocatorMTLS{Enabled: true})
	require.NoError(t, err)
	require.Contains(t, rendered, "endpoint: https://collector-with-ta-targetallocator:443\n")
	require.Contains(t, rendered, "ca_file: /tls/ca.crt\n")
	require.Contains(t, rendered, "cert_file: /tls/tls.crt\n")
	require.Contains(t, rendered, "key_file: /tls/tls.key\n")
	sts := mustFind[*appsv1.StatefulSet](t, c.Objects)
	clientSecret := secretAt(t, sts.Spec.Template.Spec, "/tls")

	ta := allocatorFromExample(t, mtlsExample)
	got, err := manifests.BuildTargetAllocator(manifests.AllocatorInput{TargetAllocator: ta}, settings)
	require.NoError(t, err)
	cfg := mustFind[*corev1.ConfigMap](t, got.Objects).Data[manifests.TargetAllocatorConfigKey]
	require.Contains(t, cfg, "https:\n  ca_file_path: /tls/ca.crt\n  enabled: true\n  listen_addr: :8443\n  tls_cert_file_path: /tls/tls.crt\n  tls_key_file_path: /tls/tls.key\n")
	dep := mustFind[*appsv1.Deployment](t, got.Objects)
	serverSecret := secretAt(t, dep.Spec.Template.Spec, "/tls")
	require.Contains(t, dep.Spec.Template.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP})
	svc := mustFind[*corev1.Service](t, got.Objects)
	require.Equal(t, "collector-with-ta-targetallocator", svc.Name)
	require.Contains(t, svc.Spec.Ports, corev1.ServicePort{Name: "targetallocation-https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("https")})

	certs := map[string]*unstructured.Unstructured{}
	for _, o := range got.Objects {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "Certificate" {
			certs[u.GetName()] = u
		}
	}
	require.Len(t, certs, 3, "CA, server and client certificates")
	for _, secret := range []string{clientSecret, serverSecret} {
		cert := certs[secret]
		require.NotNil(t, cert, "a Certificate fills Secret %s", secret)
		name, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
		require.Equal(t, secret, name)
		dns, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		require.Contains(t, dns, svc.Name, "valid for the name the collector dials")
		issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
		require.Equal(t, manifests.CAIssuerName(ta.Name), issuer, "both leaves come from one CA, so each side verifies the other")
	}
}

// TestMTLSReferencedAllocator: a collector naming a TargetAllocator with the
// label polls it the way that allocator's mtls says.
func TestMTLSReferencedAllocator(t *testing.T) {
	t.Parallel()
	labelled := strings.Replace(upstreamExample, "  namespace: observability\n", "  namespace: observability\n  labels:\n    opentelemetry.io/target-allocator: shared\n", 1)
	c := decodeCollector(t, labelled)
	plain, err := manifests.BuildCollector(c, settings, nil)
	require.NoError(t, err)
	shared := &v1alpha1.TargetAllocator{}
	shared.Name, shared.Namespace = "shared", "observability"
	shared.Spec.Mtls = &v1beta1.TargetAllocatorMTLS{Enabled: true}
	secured, err := manifests.BuildCollector(c, settings, shared)
	require.NoError(t, err)
	require.NotEqual(t, plain.ConfigHash, secured.ConfigHash)
	cm := mustFind[*corev1.ConfigMap](t, secured.Objects)
	require.Contains(t, cm.Data[manifests.CollectorConfigKey], "endpoint: https://shared-targetallocator:443\n")
	require.Equal(t, manifests.ClientCertificateName("shared"), secretAt(t, mustFind[*appsv1.StatefulSet](t, secured.Objects).Spec.Template.Spec, "/tls"))
}

// TestMTLSInvalid: user-provided mtls without its certificates is an error
// of the builders too (the schema refuses it; fuzzed objects skip the schema).
func TestMTLSInvalid(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"no tls":         strings.Replace(mtlsExample, "      enabled: true\n", "      enabled: true\n      useCertManager: false\n", 1),
		"two CA kinds":   strings.Replace(mtlsUserExample, "configMap: {name: ta-ca, key: root.pem}", "configMap: {name: ta-ca}\n          secret: {name: ta-ca}", 1),
		"unnamed secret": strings.Replace(mtlsUserExample, "{name: ta-server}", "{name: \"\"}", 1),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := manifests.BuildCollector(decodeCollector(t, doc), settings, nil)
			require.ErrorIs(t, err, manifests.ErrInvalidMTLS)
		})
	}
}

func mustFind[T any](t *testing.T, objs []client.Object) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.(T); ok {
			return v
		}
	}
	var zero T
	require.FailNowf(t, "not built", "no %T", zero)
	return zero
}

// secretAt returns the Secret of the volume mounted at dir in the first container.
func secretAt(t *testing.T, pod corev1.PodSpec, dir string) string {
	t.Helper()
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	require.FailNow(t, "no secret volume mounted at "+dir)
	return ""
}
