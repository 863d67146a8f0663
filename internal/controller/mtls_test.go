package controller_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardwise/shardwise/apis/v1alpha1"
	"github.com/shardwise/shardwise/internal/controller"
	"github.com/shardwise/shardwise/internal/manifests"
	"github.com/shardwise/shardwise/internal/testenv"
)

// TestMTLSCertManager applies the upstream example with
// targetAllocator.mtls.enabled (cert-manager, the default). Without
// cert-manager's API the collector and a standalone TargetAllocator report
// CertManagerNotInstalled and nothing is created. Once cert-manager's CRDs
// are installed, the Issuers and Certificates are created and owned by the
// allocator, the allocator Deployment and the collector StatefulSet mount the
// server and client Secrets, both configs speak HTTPS, and turning mtls off
// removes all of it.
//
// The test installs cert-manager's CRDs into the shared API server: no other
// test may depend on their absence.
func TestMTLSCertManager(t *testing.T) {
	t.Parallel()
	ns := "mtls"
	h := start(t, ns)
	ctx := t.Context()
	const name = "collector-with-ta"
	doc := strings.Replace(upstreamExample, "    enabled: true\n", "    enabled: true\n    mtls:\n      enabled: true\n", 1)
	_, err := h.createYAML(t, ns, doc)
	require.NoError(t, err)
	_, err = h.createYAML(t, ns, `
apiVersion: opentelemetry.io/v1alpha1
kind: TargetAllocator
metadata:
  name: standalone
spec:
  mtls:
    enabled: true
`)
	require.NoError(t, err)

	c := h.waitReady(t, ns, name, metav1.ConditionFalse)
	cond := meta.FindStatusCondition(c.Status.Conditions, controller.ConditionReady)
	require.Equal(t, controller.ReasonCertManagerNotInstalled, cond.Reason)
	require.Contains(t, cond.Message, "spec.targetAllocator.mtls.enabled needs cert-manager")
	eventually(t, waitFor, func() error {
		var ta v1alpha1.TargetAllocator
		if err := h.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "standalone"}, &ta); err != nil {
			return err
		}
		cond, err := readyCondition(ta.Status.Conditions, ta.Generation)
		if err != nil {
			return err
		}
		if cond.Reason != controller.ReasonCertManagerNotInstalled || !strings.Contains(cond.Message, "spec.mtls.enabled needs cert-manager") {
			return fmt.Errorf("Ready %s: %s", cond.Reason, cond.Message)
		}
		return nil
	})
	for _, list := range []client.ObjectList{&appsv1.StatefulSetList{}, &appsv1.DeploymentList{}, &v1alpha1.TargetAllocatorList{}} {
		require.NoError(t, h.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{manifests.LabelManagedBy: manifests.ManagedBy}))
		require.Zero(t, meta.LenList(list), "nothing is created without cert-manager: %T", list)
	}

	// cert-manager arrives. The reconcilers check again every minute; an
	// annotation makes them look now.
	_, err = envtest.InstallCRDs(testenv.Require(t, env), envtest.CRDInstallOptions{Paths: []string{filepath.Join(testenv.Root(), "test", "crds-cert-manager")}})
	require.NoError(t, err)
	c = h.collector(t, ns, name)
	h.update(t, c, func() { c.Annotations = map[string]string{"touch": "1"} })
	c = h.waitReady(t, ns, name, metav1.ConditionTrue)

	var ta v1alpha1.TargetAllocator
	h.get(t, ns, name, &ta)
	requireControlledBy(t, &ta, c)
	require.True(t, ta.Spec.Mtls.CertManager())
	objs := map[string]*unstructured.Unstructured{}
	eventually(t, waitFor, func() error {
		for _, kind := range []string{"Issuer", "Certificate"} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(manifests.CertManagerGroupVersion.WithKind(kind + "List"))
			if err := h.client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			for i := range list.Items {
				objs[kind+"/"+list.Items[i].GetName()] = &list.Items[i]
			}
		}
		if len(objs) != 5 {
			return fmt.Errorf("%d cert-manager objects, want 5", len(objs))
		}
		return nil
	})
	for _, key := range []string{
		"Issuer/" + manifests.SelfSignedIssuerName(name), "Issuer/" + manifests.CAIssuerName(name),
		"Certificate/" + manifests.CACertificateName(name), "Certificate/" + manifests.ServerCertificateName(name), "Certificate/" + manifests.ClientCertificateName(name),
	} {
		require.Contains(t, objs, key)
		requireControlledBy(t, objs[key], &ta)
	}

	var sts appsv1.StatefulSet
	h.get(t, ns, manifests.CollectorName(name), &sts)
	require.Equal(t, manifests.ClientCertificateName(name), mountedSecret(t, sts.Spec.Template.Spec, manifests.TLSDir))
	var cm corev1.ConfigMap
	h.get(t, ns, sts.Spec.Template.Spec.Volumes[0].ConfigMap.Name, &cm)
	require.Contains(t, cm.Data[manifests.CollectorConfigKey], "endpoint: https://"+manifests.TargetAllocatorName(name)+":443\n")
	require.Contains(t, cm.Data[manifests.CollectorConfigKey], "cert_file: /tls/tls.crt\n")

	var dep appsv1.Deployment
	h.get(t, ns, manifests.TargetAllocatorName(name), &dep)
	require.Equal(t, manifests.ServerCertificateName(name), mountedSecret(t, dep.Spec.Template.Spec, manifests.TLSDir))
	h.get(t, ns, manifests.TargetAllocatorName(name), &cm)
	require.Contains(t, cm.Data[manifests.TargetAllocatorConfigKey], "tls_key_file_path: /tls/tls.key\n")
	var svc corev1.Service
	h.get(t, ns, manifests.TargetAllocatorName(name), &svc)
	require.Len(t, svc.Spec.Ports, 2)
	require.Equal(t, int32(443), svc.Spec.Ports[1].Port)

	// mtls off: the cert-manager objects go, both sides speak plain HTTP.
	c = h.collector(t, ns, name)
	h.update(t, c, func() { c.Spec.TargetAllocator.Mtls.Enabled = false })
	eventually(t, waitFor, func() error {
		for _, kind := range []string{"Issuer", "Certificate"} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(manifests.CertManagerGroupVersion.WithKind(kind + "List"))
			if err := h.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{manifests.LabelInstance: manifests.InstanceLabel(ns, name)}); err != nil {
				return err
			}
			if n := len(list.Items); n > 0 {
				return fmt.Errorf("%d %s left", n, kind)
			}
		}
		if err := h.client.Get(ctx, client.ObjectKeyFromObject(&sts), &sts); err != nil {
			return err
		}
		for _, v := range sts.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				return fmt.Errorf("statefulset still mounts %s", v.Secret.SecretName)
			}
		}
		return nil
	})
}

// mountedSecret returns the Secret of the volume mounted at dir in the first container.
func mountedSecret(t *testing.T, pod corev1.PodSpec, dir string) string {
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
