//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// These features stop the operator, count every write it makes, or take a node away: each runs
// alone, after the parallel ones.

// TestNoWritesWhileNothingChanges: jobs that sit Running cost no write request, however often
// they are reconciled. Writes are counted in the API server's audit log (every write request,
// hack/kwok/audit-policy.yaml), by the operator's user agent "trainyard"; the operator's
// controller_runtime_reconcile_total shows that the reconciles did happen.
func TestNoWritesWhileNothingChanges(t *testing.T) {
	f := features.New("no write requests while jobs sit Running through forced reconciles").
		WithLabel("area", "operator").
		Assess("annotating the jobs twice reconciles them and writes nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := os.Stat(auditLog); auditLog == "" || err != nil {
				t.Skipf("no audit log of the API server (%q): set E2E_AUDIT_LOG for this cluster", auditLog)
			}
			c, ns := namespaced(ctx, t, cfg, "idle")
			create(ctx, t, c, ns, pyTorchJob("idle-pt").Workers(2, sim("", "")).Obj())
			create(ctx, t, c, ns, tensorFlowJob("idle-tf").Replica(batch.TensorFlowReplicaChief, 1, sim("", "")).Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Obj())
			for _, j := range []string{"idle-pt", "idle-tf"} {
				eventually(t, 60*time.Second, j+" is Running with every replica running", func() (bool, string) {
					st, _ := jobStatus(ctx, c, ns, j)
					return st.Phase == batch.JobRunning && st.Aggregate.Running == 3, fmt.Sprintf("%s %+v", st.Phase, st.Aggregate)
				})
			}
			time.Sleep(3 * time.Second) // past the status batch interval: everything is written
			reconcilesBefore := reconciles(t)
			start := time.Now()
			for _, poke := range []string{"1", "2"} {
				patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"e2e.trainyard.dev/poke":%q}}}`, poke)))
				for _, j := range []client.Object{
					&batch.PyTorchTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idle-pt"}},
					&batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "idle-tf"}},
				} {
					if err := c.Patch(ctx, j, patch); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(3 * time.Second)
			}
			end := time.Now()
			reconciled := reconciles(t) - reconcilesBefore
			// Only this feature's namespace: the features before it leave namespaces being deleted,
			// whose pods the operator may try to replace until the namespace is gone.
			writes := operatorWrites(t, ns, start, end)
			t.Logf("window %s: %d reconciles, %d operator write requests in the audit log %v", end.Sub(start).Round(time.Millisecond), reconciled, total(writes), writes)
			if reconciled < 4 {
				t.Errorf("only %d reconciles in the window: the annotations did not force reconciles, so zero writes would prove nothing", reconciled)
			}
			if n := total(writes); n != 0 {
				t.Errorf("%d write requests while nothing changed: %v; want 0", n, writes)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// reconciles is the shared operator's controller_runtime_reconcile_total, summed.
func reconciles(t *testing.T) int {
	t.Helper()
	operatorMu.Lock()
	addr := sharedOperator.Metrics
	operatorMu.Unlock()
	v, err := metricValue(addr, "controller_runtime_reconcile_total")
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// operatorWrites counts the operator's write requests to objects of namespace ns in the audit log
// between from and to, by "verb resource[/subresource]"; writes elsewhere are logged.
func operatorWrites(t *testing.T, ns string, from, to time.Time) map[string]int {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, elsewhere := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
			} `json:"objectRef"`
			StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || !strings.HasPrefix(e.UserAgent, "trainyard") {
			continue
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if ts := e.StageTimestamp.Time; ts.Before(from) || ts.After(to) {
			continue
		}
		r := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			r += "/" + e.ObjectRef.Subresource
		}
		if ns != "" && e.ObjectRef.Namespace != ns {
			elsewhere[e.ObjectRef.Namespace+": "+e.Verb+" "+r]++
			continue
		}
		out[e.Verb+" "+r]++
	}
	if len(elsewhere) > 0 {
		t.Logf("operator writes outside %s in the window (other features' namespaces being deleted): %v", ns, elsewhere)
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

const managedLabel = "kwok.x-k8s.io/managed"

// TestNodeLost: a node whose kubelet stops (its KWOK heartbeat ends) has its pods evicted; a
// worker under OnFailure is replaced elsewhere and counted as a restart, a worker under Never
// fails its job.
func TestNodeLost(t *testing.T) {
	var lost string
	f := features.New("a lost node's pods are replaced or fail their job as the restart policy says").
		WithLabel("area", "operator").
		Assess("OnFailure replaces the worker elsewhere, Never fails the job", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, "node")
			var nodes corev1.NodeList
			if err := c.List(ctx, &nodes, client.MatchingLabels{managedLabel: "true"}); err != nil || len(nodes.Items) < 2 {
				t.Skipf("needs at least 2 KWOK-managed nodes (label %s=true): %d (%v)", managedLabel, len(nodes.Items), err)
			}
			sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
			lost = nodes.Items[len(nodes.Items)-1].Name
			keep := nodes.Items[0].Name
			// The masters stay on a node that lives; the workers start on the node that will be lost.
			for _, j := range []struct {
				name   string
				policy batch.RestartPolicy
			}{{"replaced", batch.RestartPolicyOnFailure}, {"failed", batch.RestartPolicyNever}} {
				job := pyTorchJob(j.name).Workers(1, sim("", "")).WorkerPolicy(j.policy).Obj().(*batch.PyTorchTrainingJob)
				job.Spec.ReplicaSpecs[0].Template.Spec.NodeName = keep
				job.Spec.ReplicaSpecs[1].Template.Spec.Affinity = preferNode(lost)
				create(ctx, t, c, ns, job)
			}
			uids := map[string]types.UID{}
			for _, pod := range []string{"replaced-worker-0", "failed-worker-0"} {
				eventually(t, 60*time.Second, pod+" runs on "+lost, func() (bool, string) {
					p, ok := getPod(ctx, c, ns, pod)
					uids[pod] = p.UID
					return ok && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == lost, p.Spec.NodeName + "/" + string(p.Status.Phase)
				})
			}
			setManaged(ctx, t, c, lost, false)
			start := time.Now()
			eventually(t, 90*time.Second, "job failed is Failed", func() (bool, string) {
				st, err := jobStatus(ctx, c, ns, "failed")
				if err == nil && st.Phase == batch.JobFailed {
					return true, ""
				}
				return false, fmt.Sprintf("phase %q; %s", st.Phase, nodeAndPod(ctx, c, lost, ns, "failed-worker-0"))
			})
			eventually(t, 90*time.Second, "replaced-worker-0 comes back on a live node", func() (bool, string) {
				p, ok := getPod(ctx, c, ns, "replaced-worker-0")
				return ok && p.UID != uids["replaced-worker-0"] && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != lost,
					fmt.Sprintf("uid %s on %q %s", p.UID, p.Spec.NodeName, p.Status.Phase)
			})
			t.Logf("node %s lost: the Never job failed and the OnFailure worker ran again elsewhere %.1f s after the kubelet stopped", lost, time.Since(start).Seconds())
			// The count is the status's; one full-suite run read 0 just as the new pod ran (it
			// passed alone and in every other run), so the wait for it is measured and logged.
			ran := time.Now()
			eventually(t, 30*time.Second, "the OnFailure job is Running with backoffCount 1", func() (bool, string) {
				st, err := jobStatus(ctx, c, ns, "replaced")
				return err == nil && st.Phase == batch.JobRunning && st.BackoffCount == 1, fmt.Sprintf("phase %s backoffCount %d", st.Phase, st.BackoffCount)
			})
			t.Logf("the OnFailure job's backoffCount was 1 %.2f s after its new worker was seen running", time.Since(ran).Seconds())
			time.Sleep(2 * time.Second)
			if st, _ := jobStatus(ctx, c, ns, "replaced"); st.BackoffCount != 1 {
				t.Errorf("the OnFailure job's backoffCount became %d; the lost node's pod must count once", st.BackoffCount)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if lost != "" {
				setManaged(ctx, t, newClient(t, cfg), lost, true)
			}
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

func preferNode(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
			}}},
		}},
	}}
}

// setManaged starts or stops a node's fake kubelet, and on start waits for the node to be Ready.
// nodeAndPod describes a node (Ready condition, taints, lease renewal) and a pod on it, for a
// failure message.
func nodeAndPod(ctx context.Context, c client.Client, node, ns, pod string) string {
	var n corev1.Node
	_ = c.Get(ctx, types.NamespacedName{Name: node}, &n)
	ready := "?"
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = fmt.Sprintf("%s since %s", cond.Status, cond.LastTransitionTime.Format(time.TimeOnly))
		}
	}
	var lease coordinationv1.Lease
	_ = c.Get(ctx, types.NamespacedName{Namespace: "kube-node-lease", Name: node}, &lease)
	renewed := "never"
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Format(time.TimeOnly)
	}
	p, _ := getPod(ctx, c, ns, pod)
	return fmt.Sprintf("node %s: Ready %s, taints %v, lease renewed %s, labels %v; pod %s: %s on %q, deleting %v, tolerations %v",
		node, ready, n.Spec.Taints, renewed, n.Labels, pod, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, p.Spec.Tolerations)
}

func setManaged(ctx context.Context, t *testing.T, c client.Client, node string, managed bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, managedLabel)
	if managed {
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, managedLabel)
	}
	if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("labelling node %s: %v", node, err)
	}
	if !managed {
		return
	}
	eventually(t, 60*time.Second, "node "+node+" is Ready again", func() (bool, string) {
		var n corev1.Node
		if err := c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0, fmt.Sprintf("%s, taints %v", cond.Status, n.Spec.Taints)
			}
		}
		return false, "no Ready condition"
	})
}
