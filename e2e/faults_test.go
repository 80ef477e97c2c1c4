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
	"github.com/trainyard/trainyard/render"
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
	out, elsewhere := map[string]int{}, map[string]int{}
	readAudit(t, func(e auditEntry) {
		if !strings.HasPrefix(e.UserAgent, "trainyard") {
			return
		}
		switch e.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			return
		}
		if ts := e.StageTimestamp.Time; ts.Before(from) || ts.After(to) {
			return
		}
		r := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			r += "/" + e.ObjectRef.Subresource
		}
		if ns != "" && e.ObjectRef.Namespace != ns {
			elsewhere[e.ObjectRef.Namespace+": "+e.Verb+" "+r]++
			return
		}
		out[e.Verb+" "+r]++
	})
	if len(elsewhere) > 0 {
		t.Logf("operator writes outside %s in the window (other features' namespaces being deleted): %v", ns, elsewhere)
	}
	return out
}

// auditEntry is one line of the API server's audit log, as far as the tests read it.
type auditEntry struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp metav1.MicroTime `json:"stageTimestamp"`
}

// readAudit hands each line of the API server's audit log to each.
func readAudit(t *testing.T, each func(auditEntry)) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			each(e)
		}
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

const managedLabel = "kwok.x-k8s.io/managed"

// TestNodeLost: a node whose kubelet stops (its KWOK heartbeat ends) under jobs whose pods carry
// Kubernetes' default tolerations of a not-ready and an unreachable node (300 s: the local
// cluster's API server would give them 5 s, so they are written out). The controller-manager's
// taint eviction would wait those 300 s and then delete gracefully, which no kubelet confirms;
// the operator takes the pods for lost once the node has been NotReady for --node-lost-after
// (60 s), force-deletes them, and restarts by the restart policy as a disruption: the OnFailure
// job's gang is replaced elsewhere (backoffCount 0, disruptionCount 1), the Never job fails.
func TestNodeLost(t *testing.T) {
	var lost string
	f := features.New("a node stopped under a job with default tolerations has its pods replaced within --node-lost-after plus 30 s, as a disruption; Never fails its job").
		WithLabel("area", "operator").
		Assess("OnFailure replaces the gang elsewhere with backoffCount 0, Never fails the job", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
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
				job := pyTorchJob(j.name).Workers(1, sim("", "")).Policy(j.policy).Tolerate(300).Obj().(*batch.PyTorchTrainingJob)
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
			stopped := time.Now()
			var notReady time.Time
			eventually(t, 60*time.Second, "node "+lost+" is not Ready", func() (bool, string) {
				var n corev1.Node
				if err := c.Get(ctx, types.NamespacedName{Name: lost}, &n); err != nil {
					return false, err.Error()
				}
				for _, cond := range n.Status.Conditions {
					if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
						notReady = cond.LastTransitionTime.Time
						return true, ""
					}
				}
				return false, "Ready"
			})
			t.Logf("node %s not Ready %.1f s after its kubelet stopped (the node controller's grace period)", lost, notReady.Sub(stopped).Seconds())
			// Until the bound is nearly due the pods stay as they are: the controller-manager must not
			// have evicted them (their tolerations last 300 s), and the operator forces nothing yet.
			bound := render.DefaultNodeLostAfter
			early := ""
			var replacedAt time.Time
			eventually(t, bound+90*time.Second, "replaced-worker-0 runs again on a live node", func() (bool, string) {
				old, ok := getPod(ctx, c, ns, "failed-worker-0")
				if ok && old.UID == uids["failed-worker-0"] && old.DeletionTimestamp != nil && time.Since(notReady) < bound-5*time.Second && early == "" {
					early = fmt.Sprintf("failed-worker-0 was being deleted %.1f s after its node went not Ready", time.Since(notReady).Seconds())
				}
				p, ok := getPod(ctx, c, ns, "replaced-worker-0")
				if ok && p.UID != uids["replaced-worker-0"] && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != lost {
					replacedAt = time.Now()
					return true, ""
				}
				return false, fmt.Sprintf("uid %s on %q %s; %s", p.UID, p.Spec.NodeName, p.Status.Phase, nodeAndPod(ctx, c, lost, ns, "replaced-worker-0"))
			})
			if early != "" {
				t.Errorf("%s: before the 300 s toleration and the operator's %s bound; the controller-manager evicted it", early, bound)
			}
			took := replacedAt.Sub(notReady)
			t.Logf("node %s lost: the OnFailure job's worker ran again elsewhere %.1f s after the node went not Ready (%.1f s after its kubelet stopped); bound %s",
				lost, took.Seconds(), replacedAt.Sub(stopped).Seconds(), bound)
			if took > bound+30*time.Second {
				t.Errorf("replaced %.1f s after the node went not Ready; want within the bound (%s) plus 30 s", took.Seconds(), bound)
			}
			if took < bound {
				t.Errorf("replaced %.1f s after the node went not Ready, before the bound (%s): a node that could come back lost its pods", took.Seconds(), bound)
			}
			eventually(t, 30*time.Second, "job failed is Failed, its worker having lost its node", func() (bool, string) {
				st, err := jobStatus(ctx, c, ns, "failed")
				return err == nil && st.Phase == batch.JobFailed && condition(st, batch.ConditionFailed) == "True/"+batch.ReasonFailed,
					fmt.Sprintf("phase %q, Failed %q", st.Phase, condition(st, batch.ConditionFailed))
			})
			eventually(t, 30*time.Second, "the OnFailure job is Running, restarted as a disruption", func() (bool, string) {
				st, err := jobStatus(ctx, c, ns, "replaced")
				return err == nil && st.Phase == batch.JobRunning && st.BackoffCount == 0 && st.DisruptionCount == 1 && st.GangRestarts == 1,
					fmt.Sprintf("phase %s backoffCount %d disruptionCount %d gangRestarts %d", st.Phase, st.BackoffCount, st.DisruptionCount, st.GangRestarts)
			})
			for _, pod := range []string{"replaced-worker-0", "failed-worker-0"} {
				if p, ok := getPod(ctx, c, ns, pod); ok && p.UID == uids[pod] {
					t.Errorf("%s of the lost node is still there (deleting %v): it should have been force-deleted", pod, p.DeletionTimestamp != nil)
				}
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
