package takeover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/shardwise/shardwise/internal/testenv"
)

// Bounds for everything that waits.
const (
	waitFor   = 90 * time.Second
	pollEvery = 250 * time.Millisecond
)

// cluster is an envtest control plane: an admin client and the kubeconfig
// file of a cluster administrator for the operators under test.
type cluster struct {
	client     client.Client
	kubeconfig string
}

// startCluster starts a control plane with the CRDs of dirs until the test
// ends.
func startCluster(t *testing.T, dirs ...string) cluster {
	t.Helper()
	env := &envtest.Environment{CRDDirectoryPaths: dirs, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	require.NoError(t, err, "start envtest")
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	user, err := env.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	kc, err := user.KubeConfig()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, kc, 0o600))
	return cluster{client: c, kubeconfig: path}
}

// input is one file of testdata/inputs: the upstream e2e manifests applied
// into the namespace the file is named after.
type input struct {
	namespace string
	objects   []*unstructured.Unstructured
}

// inputs reads testdata/inputs.
func inputs(t *testing.T) []input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "inputs", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []input
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		objs, err := decodeAll(raw)
		require.NoError(t, err, f)
		out = append(out, input{namespace: strings.TrimSuffix(filepath.Base(f), ".yaml"), objects: objs})
	}
	return out
}

// decodeAll splits a multi-document YAML stream into objects.
func decodeAll(raw []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// createInputs creates the namespaces and the input resources, and returns
// the resources as created (with their UIDs).
func (c cluster) createInputs(t *testing.T, in []input) []*unstructured.Unstructured {
	t.Helper()
	ctx := t.Context()
	var created []*unstructured.Unstructured
	for _, i := range in {
		err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: i.namespace}})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		for _, o := range i.objects {
			o := o.DeepCopy()
			o.SetNamespace(i.namespace)
			require.NoError(t, c.client.Create(ctx, o), "%s %s/%s", o.GetKind(), i.namespace, o.GetName())
			created = append(created, o)
		}
	}
	return created
}

// kinds are the kinds of what an operator builds for the inputs.
var kinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "opentelemetry.io", Version: "v1alpha1", Kind: "TargetAllocator"},
}

// built lists the objects of kinds in ns that a resource of the inputs
// controls (what an operator built), sorted by kind and name.
func (c cluster) built(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, gvk := range kinds {
		var list unstructured.UnstructuredList
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		require.NoError(t, c.client.List(t.Context(), &list, client.InNamespace(ns)), gvk.Kind)
		for i := range list.Items {
			o := &list.Items[i]
			if metav1.GetControllerOf(o) == nil {
				continue // the namespace's own (kube-root-ca.crt, default SA) or a user's
			}
			o.SetGroupVersionKind(gvk)
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return strings.Compare(a.GetKind()+"/"+a.GetName(), b.GetKind()+"/"+b.GetName())
	})
	return out
}

// eventually is testenv.Eventually.
var eventually = testenv.Eventually

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a binary under test, stopped (SIGTERM) when the test ends;
// its output is logged when the test failed.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs bin with args and KUBECONFIG set, and waits until healthz on
// 127.0.0.1:probe answers 200.
func start(t *testing.T, name, bin, kubeconfig string, probe int, args ...string) *process {
	t.Helper()
	p := &process{done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	// Both operators take their own namespace from the environment
	// (upstream's NAMESPACE, shardwise's POD_NAMESPACE).
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE=default", "NAMESPACE=default")
	p.cmd.Stdout, p.cmd.Stderr = p, p
	require.NoError(t, p.cmd.Start(), "start %s", name)
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			lines := strings.Split(p.log(), "\n")
			t.Logf("%s log (last lines):\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", probe)
	eventually(t, waitFor, name+" healthy", func() error {
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", name, p.log())
		default:
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d", url, resp.StatusCode)
		}
		return nil
	})
	return p
}

// stop sends SIGTERM and waits, killing after 15 s.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
