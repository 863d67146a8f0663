package testenv

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/goleak"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// MainLeakChecked is Main for concurrent packages: controller-runtime's log
// is discarded, and goroutines left after the tests (but for LeakIgnores)
// fail the run.
func MainLeakChecked(m *testing.M, env **Env, crdDirs ...string) int {
	ctrllog.SetLogger(logr.Discard())
	code := Main(m, env, crdDirs...)
	if code == 0 {
		if err := goleak.Find(LeakIgnores()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// ReadOnly are the verbs of read-only access.
var ReadOnly = []string{"get", "list", "watch"}

// Grant binds a ClusterRole with rules to user, cluster-wide.
func Grant(t *testing.T, kube kubernetes.Interface, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	_, err := kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster role %s: %v", user, err)
	}
	_, err = kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create cluster role binding %s: %v", user, err)
	}
}

// RestrictedUser returns the config of a user granted rules, and an admin
// client; it skips the test when the control plane is unavailable.
func RestrictedUser(t *testing.T, env *Env, name string, rules ...rbacv1.PolicyRule) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	Require(t, env)
	admin, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	Grant(t, admin, name, rules...)
	return env.UserConfig(t, name), admin
}

// Logger returns a logger that writes lines at level and above to tb.Log.
func Logger(tb testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: level}))
}

// tbWriter sends log lines to tb.Log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Eventually calls f every 200 ms until it returns nil, failing the test
// with what and f's last error after timeout (or when the test's context
// ends).
func Eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || t.Context().Err() != nil {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
