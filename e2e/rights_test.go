//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// rightsServiceAccount is the identity TestKubeflowKindsFollowTheRights runs its operator as: the
// default install's ClusterRole (trainyard-manager) and, only while the feature grants it,
// kustomize/kubeflow's (trainyard-manager-kubeflow).
const rightsServiceAccount = "trainyard-rights"

// TestKubeflowKindsFollowTheRights: an operator with the default install's rights in a cluster
// that has the kubeflow.org CRDs (a default install beside Kubeflow's CRDs, or the chart's
// kubeflow.enabled turned off) runs T9k jobs and leaves PyTorchJobs alone; granted the rights, it
// serves them with no restart; the rights taken away, it stops, naming the right, rather than
// half serve the kind (its status writes refused) or hang on a cache that cannot sync.
//
// It holds operatorMu and stops the shared operator meanwhile: two operators would both
// reconcile every job.
func TestKubeflowKindsFollowTheRights(t *testing.T) {
	f := features.New("the kubeflow.org kinds are served only while the operator has the rights to serve them").
		WithLabel("area", "install").
		Assess("without the rights a PyTorchJob is left alone; granted, it is served with no restart; taken away, the operator stops and says which right it lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			operatorMu.Lock()
			defer operatorMu.Unlock()
			defer standAsideSharedOperator(t, cfg)()

			binding := func(role string) string {
				return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %[1]s-%[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %[2]s}
subjects: [{kind: ServiceAccount, name: %[1]s, namespace: %[3]s}]
`, rightsServiceAccount, role, operatorNamespace)
			}
			identity := fmt.Sprintf("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: %s, namespace: %s}\n---\n%s",
				rightsServiceAccount, operatorNamespace, binding("trainyard-manager"))
			if out, err := kubectl(ctx, cfg, identity, "apply", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				_, _ = kubectl(ctx, cfg, binding("trainyard-manager-kubeflow"), "delete", "--ignore-not-found", "-f", "-")
				_, _ = kubectl(ctx, cfg, identity, "delete", "--ignore-not-found", "-f", "-")
			})
			kc := filepath.Join(repoRoot, ".devcluster", "e2e", "rights.kubeconfig")
			if err := serviceAccountKubeconfig(ctx, cfg, operatorNamespace, rightsServiceAccount, kc); err != nil {
				t.Fatal(err)
			}
			const logName = "operator-rights.log"
			logPath := filepath.Join(repoRoot, ".devcluster", "e2e", logName)
			_ = os.Remove(logPath)
			op, err := startOperatorAs(kc, logName)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if op.alive() {
					_ = op.stop()
				}
			}()

			c, ns := namespaced(ctx, t, cfg, "rights")
			create(ctx, t, c, ns, pyTorchJob("t9k").Obj())
			applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: kf}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure`+kfPod("pytorch", simRunsForever))
			waitPhase(ctx, t, c, ns, "t9k", batch.JobRunning)
			kfConditions := func() int {
				var j kubeflowv1.PyTorchJob
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "kf"}, &j); err != nil {
					t.Fatal(err)
				}
				return len(j.Status.Conditions)
			}
			// The T9k job ran; the PyTorchJob, created beside it, got nothing.
			if n := kfConditions(); n != 0 {
				t.Errorf("the PyTorchJob has %d conditions under an operator without the rights to serve it; want none", n)
			}
			if pods := jobPods(ctx, t, c, ns, "kf"); len(pods) != 0 {
				t.Errorf("the PyTorchJob has %d pods under an operator without the rights to serve it; want none", len(pods))
			}
			logged := func(s string) bool {
				b, _ := os.ReadFile(logPath)
				return strings.Contains(string(b), s)
			}
			if !logged("list pytorchjobs") {
				t.Errorf("the operator's log does not say which right it lacks for PyTorchJobs (%s)", logPath)
			}

			granted := time.Now()
			if out, err := kubectl(ctx, cfg, binding("trainyard-manager-kubeflow"), "apply", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			waitKubeflow(ctx, t, c, ns, "kf", kubeflowv1.JobRunning)
			t.Logf("the PyTorchJob Running %s after the rights were granted (asked again every 30 s)", time.Since(granted).Round(100*time.Millisecond))
			if !op.alive() {
				t.Fatal("the operator stopped when granted the rights")
			}

			revoked := time.Now()
			if out, err := kubectl(ctx, cfg, binding("trainyard-manager-kubeflow"), "delete", "-f", "-"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			eventually(t, 75*time.Second, "the operator stopped once the rights were taken away", func() (bool, string) {
				return !op.alive(), "still running"
			})
			t.Logf("the operator stopped %s after the rights were taken away", time.Since(revoked).Round(100*time.Millisecond))
			if !logged("no longer has a right it needs to serve PyTorchJob.kubeflow.org") {
				t.Errorf("the operator's log does not say which right it lost (%s)", logPath)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}
