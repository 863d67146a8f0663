package chart

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// hookRun is what playJob saw of one run of a hook Job.
type hookRun struct {
	args   []string
	output string
	err    error
}

// playJob does for a hook Job what the kubelet and the Job controller would,
// neither of which runs here: once the Job ns/name exists, it runs bin with
// the Job's arguments as its ServiceAccount sa (a token, so with exactly the
// chart's RBAC) and POD_NAMESPACE, then records the outcome in the Job's
// status, which Helm waits for. The run is sent on the returned channel.
func playJob(t *testing.T, cs kubernetes.Interface, cfg *rest.Config, bin, ns, name, sa string) <-chan hookRun {
	t.Helper()
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))}}, metav1.CreateOptions{})
	require.NoError(t, err, "token for %s", sa)
	kubeconfig := writeKubeconfig(t, cfg, token.Status.Token)
	out := make(chan hookRun, 1)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	t.Cleanup(cancel)
	go func() {
		defer close(out)
		var job *batchv1.Job
		for job == nil {
			j, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				job = j
			case !apierrors.IsNotFound(err):
				out <- hookRun{err: err}
				return
			}
			select {
			case <-ctx.Done():
				out <- hookRun{err: ctx.Err()}
				return
			case <-time.After(pollEvery):
			}
		}
		spec := job.Spec.Template.Spec
		if spec.ServiceAccountName != sa {
			out <- hookRun{err: fmt.Errorf("the Job runs as %q, not %q", spec.ServiceAccountName, sa)}
			return
		}
		run := hookRun{args: spec.Containers[0].Args}
		cmd := exec.CommandContext(ctx, bin, run.args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAMESPACE="+ns)
		b, runErr := cmd.CombinedOutput()
		run.output, run.err = string(b), runErr
		now := metav1.Now()
		job.Status.StartTime = &now
		conds := []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}
		if runErr != nil {
			conds = []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed}
			job.Status.Failed = 1
		} else {
			job.Status.Succeeded = 1
			job.Status.CompletionTime = &now
		}
		for _, c := range conds {
			job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{
				Type: c, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now, Reason: "PlayedByTheTest",
			})
		}
		if _, err := cs.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil && run.err == nil {
			run.err = err
		}
		out <- run
	}()
	return out
}
