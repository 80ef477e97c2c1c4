package render

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

func TestRestartBackoffDoublesFromTheSecondRestartUpToItsMax(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for restarts, w := range want {
		if got := restartBackoff(int32(restarts)); got != w {
			t.Errorf("restartBackoff(%d) = %s; want %s", restarts, got, w)
		}
	}
	if got := restartBackoff(1 << 30); got != RestartBackoffMax {
		t.Errorf("restartBackoff(2^30) = %s; want %s", got, RestartBackoffMax)
	}
}

// TemplateHash is what an edit of a replica's template is told by: an edit the pods would show
// changes it; what render replaces on every pod, unset fields, and map order do not.
func TestTemplateHashChangesWithWhatThePodsGet(t *testing.T) {
	base := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "pytorch", Image: "example/train:1", Command: []string{"python", "train.py"}, Args: []string{"--lr", ""},
				Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
			}}},
		}
	}
	// Pinned: a change of the hashing would end every back-off held across an operator upgrade
	// (docs/design.md). Change it only knowingly.
	const pinned = "62084e292078a27a52ce"
	if got := TemplateHash(base()); got != pinned {
		t.Errorf("TemplateHash of the base template = %s; want %s", got, pinned)
	}
	same := map[string]func(*corev1.PodTemplateSpec){
		"restartPolicy, which render replaces with Never": func(p *corev1.PodTemplateSpec) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
		"an operator label":      func(p *corev1.PodTemplateSpec) { p.Labels[batch.LabelOwnerName] = "other" },
		"an operator annotation": func(p *corev1.PodTemplateSpec) { p.Annotations[batch.AnnotationGangRestarts] = "7" },
		"empty lists and maps set": func(p *corev1.PodTemplateSpec) {
			p.Spec.Volumes = []corev1.Volume{}
			p.Spec.NodeSelector = map[string]string{}
		},
		"an empty security context": func(p *corev1.PodTemplateSpec) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} },
	}
	for what, edit := range same {
		p := base()
		edit(p)
		if got := TemplateHash(p); got != pinned {
			t.Errorf("%s changed the hash: %s", what, got)
		}
	}
	differ := map[string]func(*corev1.PodTemplateSpec){
		"the image":                     func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "example/train:2" },
		"the command":                   func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Command[1] = "fixed.py" },
		"an argument left empty":        func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Args = p.Spec.Containers[0].Args[:1] },
		"an environment variable":       func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Env[0].Value = "2" },
		"a label the pods get":          func(p *corev1.PodTemplateSpec) { p.Labels["team"] = "b" },
		"an annotation the pods get":    func(p *corev1.PodTemplateSpec) { p.Annotations["note"] = "y" },
		"automountServiceAccountToken":  func(p *corev1.PodTemplateSpec) { p.Spec.AutomountServiceAccountToken = ptr(false) },
		"terminationGracePeriodSeconds": func(p *corev1.PodTemplateSpec) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(0)) },
	}
	seen := map[string]string{pinned: "the base"}
	for what, edit := range differ {
		p := base()
		edit(p)
		got := TemplateHash(p)
		if prev, ok := seen[got]; ok {
			t.Errorf("%s gives the hash of %s: %s", what, prev, got)
		}
		seen[got] = what
	}
}

// heldJob is a job whose worker-1 exited 1 at 23:59:55 after one restart by exit code, so that its
// restart waits until 00:00:05; edit rewrites the job's YAML before the round at 00:00:00.
const heldJob = `apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: ht
  namespace: team-a
  uid: 5b0e1a7c-0000-4000-8000-0000000000e1
  labels: {team: a}
spec:
  torchrunConfig: {enabled: true, maxRestarts: 3}
  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4, expectedReplicas: 3}
  scheduler:
    volcano: {queue: gpu}
  runPolicy: {backoffLimit: 3}
  replicaSpecs:
  - type: worker
    scalingWeight: 1
    restartPolicy: OnFailure
    template:
      spec:
        containers:
        - name: pytorch
          image: example/train:1
          args: [train.py]
          env: [{name: LR, value: "0.1"}]
status:
  phase: Running
  startTime: "2025-12-31T23:00:00Z"
  backoffCount: 1
`

// heldRound renders the round at 00:00:00 of job (base or an edit of it) over the pods that base
// made, the one named failed of them failed.
func heldRound(t *testing.T, base, job, failed string) *Output {
	t.Helper()
	start := mustTime(t, "2025-12-31T23:00:00Z")
	crds := map[string]bool{"podgroups.scheduling.volcano.sh": true}
	was, err := ReadJob([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	made, err := Render(Input{Job: was, Now: start, InstalledCRDs: crds})
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for _, p := range made.Pods {
		p = p.DeepCopy()
		p.UID = types.UID("uid-" + p.Name)
		p.Status.Phase = corev1.PodRunning
		if p.Name == failed {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "pytorch", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, StartedAt: metav1.NewTime(mustTime(t, "2025-12-31T23:59:40Z")), FinishedAt: metav1.NewTime(mustTime(t, "2025-12-31T23:59:55Z")),
			}}}}
		}
		pods = append(pods, p)
	}
	j, err := ReadJob([]byte(job))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(Input{Job: j, Now: mustTime(t, defaultNow), Pods: pods, InstalledCRDs: crds})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Only an edit of the template ends a restart's wait: one that changes what the pods are made from
// restarts the failed replica at once, counted; one of the fields render reads beside the template
// (runPolicy, elastic's count, the scheduler, the job's labels, the template's restartPolicy that
// every pod gets as Never) keeps it.
func TestOnlyATemplateEditEndsABackoff(t *testing.T) {
	held := heldRound(t, heldJob, heldJob, "ht-worker-1")
	if held.Decisions.RestartAt == nil || len(held.Decisions.Delete) != 0 {
		t.Fatalf("unedited: restartAt %v, delete %v; want the restart held", held.Decisions.RestartAt, held.Decisions.Delete)
	}
	edits := []struct {
		what, from, to string
		ends           bool
	}{
		{"the image", "image: example/train:1", "image: example/train:2", true},
		{"the args", "args: [train.py]", "args: [fixed.py]", true},
		{"the environment", `value: "0.1"`, `value: "0.01"`, true},
		{"runPolicy", "backoffLimit: 3}", "backoffLimit: 6, activeDeadlineSeconds: 86400}", false},
		{"elastic expectedReplicas", "expectedReplicas: 3", "expectedReplicas: 4", false},
		{"the scheduler's queue", "queue: gpu", "queue: cpu", false},
		{"torchrun's maxRestarts", "maxRestarts: 3", "maxRestarts: 5", false},
		{"the job's labels", "labels: {team: a}", "labels: {team: b}", false},
		{"the template's restartPolicy", "      spec:\n        containers:", "      spec:\n        restartPolicy: OnFailure\n        containers:", false},
	}
	for _, e := range edits {
		job := strings.Replace(heldJob, e.from, e.to, 1)
		if job == heldJob {
			t.Fatalf("%s: %q not found in the job", e.what, e.from)
		}
		d := heldRound(t, heldJob, job, "ht-worker-1").Decisions
		restarted := slices.ContainsFunc(d.Delete, func(x Deletion) bool { return x.Name == "ht-worker-1" && x.Reason == DeleteRestart })
		switch {
		case e.ends && (!restarted || d.RestartAt != nil || d.BackoffCount != 2):
			t.Errorf("%s edited: delete %v, restartAt %v, backoffCount %d; want ht-worker-1 restarted now, counted (2)", e.what, d.Delete, d.RestartAt, d.BackoffCount)
		case !e.ends && (restarted || d.RestartAt == nil || !d.RestartAt.Equal(held.Decisions.RestartAt) || d.BackoffCount != 1):
			t.Errorf("%s edited: delete %v, restartAt %v, backoffCount %d; want the restart still held until %v", e.what, d.Delete, d.RestartAt, d.BackoffCount, held.Decisions.RestartAt)
		}
	}
}

// A gang restart replaces every pod of the gang, so an edit of any of its templates ends its wait:
// here the master's, while worker-1 is the replica that failed.
func TestAGangsBackoffEndsOnAnEditOfAnyOfItsTemplates(t *testing.T) {
	gang := strings.NewReplacer("  torchrunConfig: {enabled: true, maxRestarts: 3}\n", "", "  elastic: {enabled: true, minReplicas: 1, maxReplicas: 4, expectedReplicas: 3}\n", "",
		"  replicaSpecs:\n", `  replicaSpecs:
  - type: master
    restartPolicy: OnFailure
    template:
      spec:
        containers: [{name: pytorch, image: example/master:1}]
`, "    scalingWeight: 1\n", "    replicas: 2\n").Replace(heldJob)
	if d := heldRound(t, gang, gang, "ht-worker-1").Decisions; d.RestartAt == nil || d.GangRestart {
		t.Fatalf("unedited: restartAt %v, gangRestart %v; want the gang's restart held", d.RestartAt, d.GangRestart)
	}
	edited := strings.Replace(gang, "example/master:1", "example/master:2", 1)
	d := heldRound(t, gang, edited, "ht-worker-1").Decisions
	if !d.GangRestart || d.RestartAt != nil || d.BackoffCount != 2 || len(d.Delete) != 3 {
		t.Errorf("master's template edited: gangRestart %v, restartAt %v, backoffCount %d, delete %v; want the gang's 3 pods restarted now, counted (2)", d.GangRestart, d.RestartAt, d.BackoffCount, d.Delete)
	}
}
