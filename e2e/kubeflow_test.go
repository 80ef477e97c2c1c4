//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
)

// TestKubeflowJobs: kubeflow.org PyTorchJob and TFJob manifests, applied with kubectl as their
// users write them, run through the same core with Kubeflow's contract (env, labels, a Service
// per replica, status in Kubeflow's shape). The features run in parallel, each in its own
// namespace.
func TestKubeflowJobs(t *testing.T) {
	testenv.TestInParallel(t,
		operatorFeature("Kubeflow PyTorchJob (seed 000 layout): master and workers to Succeeded with MASTER_ADDR, RANK, PET_*, labels and a Service per replica; cleanPodPolicy Running", "kf-pt", kubeflowPyTorchSucceeds),
		operatorFeature("Kubeflow TFJob applied as kubeflow.org/v1beta2: chief, ps, workers and evaluator get TF_CONFIG at their Services, the chief decides; cleanPodPolicy None", "kf-tf", kubeflowTFJobV1beta2),
		operatorFeature("Kubeflow PyTorchJob runPolicy.suspend deletes the pods and says Suspended; unsuspended, the pods come back", "kf-suspend", kubeflowSuspendResume),
		operatorFeature("Kubeflow TFJob restartPolicy ExitCode: a worker exiting 137 comes back, counted in backoffCount and replicaStatuses restarts, and the State column says Running again", "kf-exitcode", kubeflowExitCodeRestart),
		operatorFeature("Kubeflow PyTorchJob cleanPodPolicy All deletes every pod, and ttlSecondsAfterFinished deletes the job", "kf-ttl", kubeflowCleanAllAndTTL),
		operatorFeature("Kubeflow PyTorchJob whose runPolicy.managedBy names another controller is left alone", "kf-managed", kubeflowManagedElsewhere),
		operatorFeature("Kubeflow elastic PyTorchJob with elasticPolicy.metrics gets an HPA on its workers, which goes when the job finishes", "kf-hpa", kubeflowElasticHPA),
		operatorFeature("Kubeflow TFJob enableDynamicWorker: sparse TF_CONFIG, and a worker failing for good leaves the job running to Succeeded", "kf-dyn", kubeflowDynamicWorker),
	)
}

// kfPod is a Kubeflow replica template with simulation annotations (YAML, indented for a
// replica spec's template).
func kfPod(container, annotations string) string {
	return fmt.Sprintf(`
      template:
        metadata:
          annotations: {%s}
        spec:
          terminationGracePeriodSeconds: 0
          containers: [{name: %s, image: example.invalid/train:1}]`, annotations, container)
}

const (
	simRunsForever = `sim.trainyard.dev/start-delay: "500ms"`
	simExits0After = `sim.trainyard.dev/start-delay: "500ms", sim.trainyard.dev/run-duration: "%s", sim.trainyard.dev/exit-code: "0"`
)

func applyYAML(ctx context.Context, t *testing.T, ns, manifest string) string {
	t.Helper()
	out, err := kubectlNS(ctx, t, ns, manifest, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
	return out
}

// applyYAMLTo is applyYAML against the cluster of cfg, which may be another than the suite's.
func applyYAMLTo(ctx context.Context, t *testing.T, cfg *envconf.Config, ns, manifest string) {
	t.Helper()
	if _, err := kubectl(ctx, cfg, manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, manifest)
	}
}

// kfStatus reads a PyTorchJob's or TFJob's status.
func kfStatus(ctx context.Context, c client.Client, ns, name string) (kubeflowv1.JobStatus, error) {
	var pt kubeflowv1.PyTorchJob
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &pt)
	if err == nil {
		return pt.Status, nil
	}
	var tf kubeflowv1.TFJob
	if err2 := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &tf); err2 != nil {
		return kubeflowv1.JobStatus{}, err
	}
	return tf.Status, nil
}

func kfCondition(st kubeflowv1.JobStatus, typ kubeflowv1.JobConditionType) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return string(c.Status)
		}
	}
	return ""
}

// waitKubeflow waits until the job's condition typ is True.
func waitKubeflow(ctx context.Context, t *testing.T, c client.Client, ns, name string, typ kubeflowv1.JobConditionType) kubeflowv1.JobStatus {
	t.Helper()
	var st kubeflowv1.JobStatus
	eventually(t, 90*time.Second, fmt.Sprintf("%s has %s=True", name, typ), func() (bool, string) {
		var err error
		st, err = kfStatus(ctx, c, ns, name)
		if err != nil {
			return false, err.Error()
		}
		raw, _ := json.Marshal(st.Conditions)
		return kfCondition(st, typ) == "True", string(raw)
	})
	return st
}

func envMap(p corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, e := range p.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

func kubeflowPyTorchSucceeds(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mnist}
spec:
  cleanPodPolicy: Running
  backoffLimit: 3
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure`+kfPod("pytorch", fmt.Sprintf(simExits0After, "4s"))+`
    Worker:
      replicas: 2
      restartPolicy: OnFailure`+kfPod("pytorch", simRunsForever))
	waitKubeflow(ctx, t, c, ns, "mnist", kubeflowv1.JobRunning)
	want := map[string]map[string]string{
		"mnist-master-0": {"MASTER_ADDR": "mnist-master-0", "MASTER_PORT": "23456", "WORLD_SIZE": "3", "RANK": "0", "PET_NNODES": "3", "PET_NODE_RANK": "0", "PET_NPROC_PER_NODE": "auto", "PYTHONUNBUFFERED": "1"},
		"mnist-worker-0": {"MASTER_ADDR": "mnist-master-0", "RANK": "1", "PET_NODE_RANK": "1", "PET_MASTER_ADDR": "mnist-master-0", "PET_MASTER_PORT": "23456"},
		"mnist-worker-1": {"RANK": "2", "WORLD_SIZE": "3"},
	}
	for name, vars := range want {
		p, ok := getPod(ctx, c, ns, name)
		if !ok {
			t.Fatalf("no pod %s", name)
		}
		env := envMap(p)
		for k, v := range vars {
			if env[k] != v {
				t.Errorf("%s: %s=%q; want %q", name, k, env[k], v)
			}
		}
		typ := strings.Split(strings.TrimPrefix(name, "mnist-"), "-")[0]
		if p.Labels[kubeflowv1.LabelJobName] != "mnist" || p.Labels[kubeflowv1.LabelReplicaType] != typ || p.Labels[kubeflowv1.LabelReplicaIndex] == "" {
			t.Errorf("%s: labels %v lack Kubeflow's job-name, replica-type %s, replica-index", name, p.Labels, typ)
		}
		if (p.Labels[kubeflowv1.LabelJobRole] == kubeflowv1.JobRoleMaster) != (name == "mnist-master-0") {
			t.Errorf("%s: job-role label %q; only the master carries job-role=master", name, p.Labels[kubeflowv1.LabelJobRole])
		}
		var svc corev1.Service
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &svc); err != nil {
			t.Errorf("Service %s (resolves the replica's address): %v", name, err)
		} else if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Selector[kubeflowv1.LabelReplicaType] != typ {
			t.Errorf("Service %s: clusterIP %q, selector %v; want headless, selecting its replica", name, svc.Spec.ClusterIP, svc.Spec.Selector)
		}
	}
	// As tools written for Kubeflow's operator select them: by its operator-name too.
	var byKubeflowSelector corev1.PodList
	if err := c.List(ctx, &byKubeflowSelector, client.InNamespace(ns), client.MatchingLabels{
		kubeflowv1.LabelJobName: "mnist", kubeflowv1.LabelOperatorName: "pytorchjob-controller"}); err != nil || len(byKubeflowSelector.Items) != 3 {
		t.Errorf("pods with job-name=mnist,operator-name=pytorchjob-controller: %d (%v); want the job's 3", len(byKubeflowSelector.Items), err)
	}
	st := waitKubeflow(ctx, t, c, ns, "mnist", kubeflowv1.JobSucceeded)
	if st.CompletionTime == nil || st.StartTime == nil {
		t.Errorf("startTime %v, completionTime %v; want both", st.StartTime, st.CompletionTime)
	}
	// Tools read the last condition's type and reason as Kubeflow's operator writes them, and
	// alerts the event's reason.
	if last := st.Conditions[len(st.Conditions)-1]; last.Type != kubeflowv1.JobSucceeded || last.Reason != "PyTorchJobSucceeded" {
		t.Errorf("last condition %s, reason %s; the State column shows the last, want Succeeded, PyTorchJobSucceeded", last.Type, last.Reason)
	}
	eventually(t, 10*time.Second, "a PyTorchJobSucceeded event", func() (bool, string) {
		n := countEvents(ctx, t, c, ns, "PyTorchJobSucceeded")
		return n == 1, fmt.Sprintf("%d", n)
	})
	eventually(t, 30*time.Second, "cleanPodPolicy Running: the running workers and their Services go, the master stays", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "mnist")
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "mnist-worker-0"}, &corev1.Service{})
		return len(pods) == 1 && pods["mnist-master-0"] == "Succeeded" && apierrors.IsNotFound(err), fmt.Sprintf("pods %s, worker Service: %v", keys(pods), err)
	})
	if rs := st.ReplicaStatuses[kubeflowv1.ReplicaTypeMaster]; rs == nil || rs.Succeeded != 1 {
		t.Errorf("replicaStatuses.Master = %+v; want succeeded 1", rs)
	}
	// The counts stay those the job finished with once the clean-up has deleted the workers, the
	// running ones counted as succeeded, as Kubeflow's operator counts them.
	st, err := kfStatus(ctx, c, ns, "mnist")
	if err != nil {
		t.Fatal(err)
	}
	if rs := st.ReplicaStatuses[kubeflowv1.ReplicaTypeWorker]; rs == nil || rs.Succeeded != 2 || rs.Active != 0 {
		t.Errorf("after the clean-up, replicaStatuses.Worker = %+v; want succeeded 2, active 0", rs)
	}
}

func kubeflowTFJobV1beta2(ctx context.Context, t *testing.T, c client.Client, ns string) {
	out := applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1beta2
kind: TFJob
metadata: {name: dist}
spec:
  cleanPodPolicy: None
  tfReplicaSpecs:
    Chief:
      replicas: 1`+kfPod("tensorflow", fmt.Sprintf(simExits0After, "4s"))+`
    PS:
      replicas: 1`+kfPod("tensorflow", simRunsForever)+`
    Worker:
      replicas: 2`+kfPod("tensorflow", simRunsForever)+`
    Evaluator:
      replicas: 1`+kfPod("tensorflow", simRunsForever))
	t.Logf("kubectl apply of a v1beta2 TFJob said: %s", strings.TrimSpace(out))
	waitKubeflow(ctx, t, c, ns, "dist", kubeflowv1.JobRunning)
	cluster := fmt.Sprintf(`{"chief":["dist-chief-0.%[1]s.svc:2222"],"evaluator":["dist-evaluator-0.%[1]s.svc:2222"],"ps":["dist-ps-0.%[1]s.svc:2222"],"worker":["dist-worker-0.%[1]s.svc:2222","dist-worker-1.%[1]s.svc:2222"]}`, ns)
	for _, task := range []struct {
		pod, typ string
		index    int
	}{{"dist-chief-0", "chief", 0}, {"dist-ps-0", "ps", 0}, {"dist-worker-1", "worker", 1}, {"dist-evaluator-0", "evaluator", 0}} {
		p, ok := getPod(ctx, c, ns, task.pod)
		if !ok {
			t.Fatalf("no pod %s", task.pod)
		}
		want := fmt.Sprintf(`{"cluster":%s,"task":{"type":%q,"index":%d},"environment":"cloud"}`, cluster, task.typ, task.index)
		if got := envMap(p)["TF_CONFIG"]; got != want {
			t.Errorf("%s TF_CONFIG\n got %s\nwant %s", task.pod, got, want)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: task.pod}, &corev1.Service{}); err != nil {
			t.Errorf("Service %s: %v", task.pod, err)
		}
	}
	waitKubeflow(ctx, t, c, ns, "dist", kubeflowv1.JobSucceeded)
	time.Sleep(2 * time.Second)
	if pods := podsByName(ctx, t, c, ns, "dist"); len(pods) != 5 {
		t.Errorf("cleanPodPolicy None: pods %s; want all 5 kept", keys(pods))
	}
	var tf kubeflowv1.TFJob
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "dist"}, &tf); err != nil || tf.APIVersion != "" && tf.APIVersion != kubeflowv1.GroupVersion.String() {
		t.Errorf("the v1beta2 job read as kubeflow.org/v1: %v", err)
	}
}

func kubeflowSuspendResume(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: sus}
spec:
  runPolicy: {suspend: false}
  pytorchReplicaSpecs:
    Master:
      replicas: 1`+kfPod("pytorch", simRunsForever)+`
    Worker:
      replicas: 2`+kfPod("pytorch", simRunsForever))
	waitKubeflow(ctx, t, c, ns, "sus", kubeflowv1.JobRunning)
	patch := func(suspend bool) {
		job := &kubeflowv1.PyTorchJob{}
		job.Namespace, job.Name = ns, "sus"
		if err := c.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"runPolicy":{"suspend":%t}}}`, suspend)))); err != nil {
			t.Fatal(err)
		}
	}
	patch(true)
	st := waitKubeflow(ctx, t, c, ns, "sus", kubeflowv1.JobSuspended)
	if pods := podsByName(ctx, t, c, ns, "sus"); len(pods) != 0 {
		t.Errorf("a Suspended job has pods: %s", keys(pods))
	}
	if kfCondition(st, kubeflowv1.JobRunning) == "True" {
		t.Errorf("Suspended and Running both True: %+v", st.Conditions)
	}
	patch(false)
	waitKubeflow(ctx, t, c, ns, "sus", kubeflowv1.JobRunning)
	st, _ = kfStatus(ctx, c, ns, "sus")
	if kfCondition(st, kubeflowv1.JobSuspended) != "False" {
		t.Errorf("after resume, Suspended = %q; want False", kfCondition(st, kubeflowv1.JobSuspended))
	}
	eventually(t, 30*time.Second, "3 pods after resume", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "sus")
		return len(pods) == 3, keys(pods)
	})
}

func kubeflowExitCodeRestart(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: ec}
spec:
  runPolicy: {backoffLimit: 2}
  tfReplicaSpecs:
    Chief:
      replicas: 1
      restartPolicy: ExitCode`+kfPod("tensorflow", simRunsForever)+`
    Worker:
      replicas: 1
      restartPolicy: ExitCode`+kfPod("tensorflow", simRunsForever))
	waitKubeflow(ctx, t, c, ns, "ec", kubeflowv1.JobRunning)
	p := waitPodRunning(ctx, t, c, ns, "ec-worker-0")
	annotatePod(ctx, t, c, ns, "ec-worker-0", simExitCode, "137")
	annotatePod(ctx, t, c, ns, "ec-worker-0", simRunDuration, "0s")
	eventually(t, 30*time.Second, "ec-worker-0 comes back and the restart is counted", func() (bool, string) {
		q, ok := getPod(ctx, c, ns, "ec-worker-0")
		st, _ := kfStatus(ctx, c, ns, "ec")
		rs := st.ReplicaStatuses[kubeflowv1.ReplicaTypeWorker]
		restarts := int32(-1)
		if rs != nil {
			restarts = rs.Restarts
		}
		return ok && q.UID != p.UID && st.BackoffCount == 1 && restarts == 1,
			fmt.Sprintf("new pod %v, backoffCount %d, Worker restarts %d", ok && q.UID != p.UID, st.BackoffCount, restarts)
	})
	st, _ := kfStatus(ctx, c, ns, "ec")
	if kfCondition(st, kubeflowv1.JobFailed) == "True" {
		t.Errorf("a retryable exit failed the job: %+v", st.Conditions)
	}
	// Once the job runs again its State column (the last condition) says Running, and Restarting
	// is gone, as Kubeflow's operator writes them.
	eventually(t, 30*time.Second, "ec's State column says Running again, with no Restarting", func() (bool, string) {
		st, err := kfStatus(ctx, c, ns, "ec")
		if err != nil || len(st.Conditions) == 0 {
			return false, fmt.Sprint(err)
		}
		last := st.Conditions[len(st.Conditions)-1]
		raw, _ := json.Marshal(st.Conditions)
		return last.Type == kubeflowv1.JobRunning && last.Status == corev1.ConditionTrue && kfCondition(st, kubeflowv1.JobRestarting) == "", string(raw)
	})
}

func kubeflowCleanAllAndTTL(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ttl}
spec:
  runPolicy: {cleanPodPolicy: All, ttlSecondsAfterFinished: 3}
  pytorchReplicaSpecs:
    Master:
      replicas: 1`+kfPod("pytorch", fmt.Sprintf(simExits0After, "1s"))+`
    Worker:
      replicas: 1`+kfPod("pytorch", simRunsForever))
	st := waitKubeflow(ctx, t, c, ns, "ttl", kubeflowv1.JobSucceeded)
	eventually(t, 30*time.Second, "cleanPodPolicy All: every pod goes, the succeeded master too", func() (bool, string) {
		pods := podsByName(ctx, t, c, ns, "ttl")
		return len(pods) == 0, keys(pods)
	})
	var gone time.Time
	eventually(t, 30*time.Second, "ttlSecondsAfterFinished deletes the job", func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ttl"}, &kubeflowv1.PyTorchJob{})
		gone = time.Now()
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("the job was gone %.1f s after its completionTime (ttlSecondsAfterFinished 3, completionTime has second precision)", gone.Sub(st.CompletionTime.Time).Seconds())
}

func kubeflowManagedElsewhere(ctx context.Context, t *testing.T, c client.Client, ns string) {
	job := func(name, runPolicy string) string {
		return `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: ` + name + `}
spec:
  runPolicy: ` + runPolicy + `
  pytorchReplicaSpecs:
    Master:
      replicas: 1` + kfPod("pytorch", simRunsForever)
	}
	applyYAML(ctx, t, ns, job("mk", "{managedBy: kueue.x-k8s.io/multikueue}"))
	// A job for Kubeflow's operator (which Trainyard stands in for), applied after: once it
	// runs, the other one has been seen and left alone.
	applyYAML(ctx, t, ns, job("ours", "{managedBy: kubeflow.org/training-operator}"))
	waitKubeflow(ctx, t, c, ns, "ours", kubeflowv1.JobRunning)
	time.Sleep(time.Second)
	if pods := podsByName(ctx, t, c, ns, "mk"); len(pods) != 0 {
		t.Errorf("a job managed by another controller got pods: %s", keys(pods))
	}
	if st, _ := kfStatus(ctx, c, ns, "mk"); len(st.Conditions) != 0 || st.StartTime != nil {
		t.Errorf("a job managed by another controller got a status: %+v", st)
	}
}

func kubeflowElasticHPA(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: auto}
spec:
  elasticPolicy:
    minReplicas: 1
    maxReplicas: 3
    metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
  pytorchReplicaSpecs:
    Worker:
      replicas: 2`+kfPod("pytorch", fmt.Sprintf(simExits0After, "3s")))
	eventually(t, 30*time.Second, "the job's HPA targets its workers", func() (bool, string) {
		var hpa autoscalingv2.HorizontalPodAutoscaler
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto"}, &hpa); err != nil {
			return false, err.Error()
		}
		ref := hpa.Spec.ScaleTargetRef
		ok := ref.Kind == "PyTorchJob" && ref.Name == "auto" && deref(hpa.Spec.MinReplicas) == 1 && hpa.Spec.MaxReplicas == 3 && len(hpa.Spec.Metrics) == 1
		return ok, fmt.Sprintf("%+v", hpa.Spec)
	})
	waitKubeflow(ctx, t, c, ns, "auto", kubeflowv1.JobSucceeded)
	eventually(t, 30*time.Second, "the HPA goes with the job's run", func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "auto"}, &autoscalingv2.HorizontalPodAutoscaler{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// kubeflowDynamicWorker: enableDynamicWorker gives each pod Kubeflow v1.8.1's sparse TF_CONFIG, and a
// Worker that exits 1 under restartPolicy Never (TFJob's default) leaves the job running; the
// chief's success then ends it Succeeded, the failed worker counted.
func kubeflowDynamicWorker(ctx context.Context, t *testing.T, c client.Client, ns string) {
	applyYAML(ctx, t, ns, `apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: dyn}
spec:
  enableDynamicWorker: true
  tfReplicaSpecs:
    Chief:
      replicas: 1`+kfPod("tensorflow", fmt.Sprintf(simExits0After, "12s"))+`
    PS:
      replicas: 1`+kfPod("tensorflow", simRunsForever)+`
    Worker:
      replicas: 2`+kfPod("tensorflow", simRunsForever))
	waitKubeflow(ctx, t, c, ns, "dyn", kubeflowv1.JobRunning)
	for pod, want := range map[string]string{
		"dyn-chief-0":  `{"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}}`,
		"dyn-ps-0":     fmt.Sprintf(`{"cluster":{"worker":{},"ps":["dyn-ps-0.%s.svc:2222"]},"task":{"type":"ps","index":0}}`, ns),
		"dyn-worker-1": fmt.Sprintf(`{"cluster":{"worker":{"1":"dyn-worker-1.%[1]s.svc:2222"},"ps":["dyn-ps-0.%[1]s.svc:2222"]},"task":{"type":"worker","index":1}}`, ns),
	} {
		p, ok := getPod(ctx, c, ns, pod)
		if !ok {
			t.Fatalf("no pod %s", pod)
		}
		if got := envMap(p)["TF_CONFIG"]; got != want {
			t.Errorf("%s TF_CONFIG\n got %s\nwant %s", pod, got, want)
		}
	}
	annotatePod(ctx, t, c, ns, "dyn-worker-1", simExitCode, "1")
	eventually(t, 30*time.Second, "dyn's status counts worker-1 failed, the job still Running", func() (bool, string) {
		st, err := kfStatus(ctx, c, ns, "dyn")
		if err != nil {
			return false, err.Error()
		}
		if kfCondition(st, kubeflowv1.JobFailed) == "True" {
			t.Fatalf("the job failed with a worker: %+v", st.Conditions)
		}
		rs := st.ReplicaStatuses[kubeflowv1.ReplicaTypeWorker]
		return rs != nil && rs.Failed == 1 && kfCondition(st, kubeflowv1.JobRunning) == "True", fmt.Sprintf("%+v", rs)
	})
	if pods := podsByName(ctx, t, c, ns, "dyn"); pods["dyn-chief-0"] != "Running" {
		t.Fatalf("the chief ended before the check (pods %v): the case proves nothing", pods)
	}
	st := waitKubeflow(ctx, t, c, ns, "dyn", kubeflowv1.JobSucceeded)
	if kfCondition(st, kubeflowv1.JobFailed) == "True" {
		t.Errorf("Failed and Succeeded both: %+v", st.Conditions)
	}
}
