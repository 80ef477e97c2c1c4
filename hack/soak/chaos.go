package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// tally counts what the soak did.
type tally struct {
	mu                               sync.Mutex
	created                          map[string]int // by kind
	scales, pauses, resumes, deletes int
	podExits, podDeletes, kills      int
	// refused counts actions the API server refused (a job that finished or went meanwhile):
	// not a fault of the operator, and not counted above; refusals keeps the first few.
	refused  int
	refusals []string
}

func (t *tally) add(f func(t *tally)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(t)
}

// chaos does things to the jobs at random, from the run's seeded source, so a run can be
// replayed with --seed (the operator's and the cluster's timing still differ).
type chaos struct {
	o     options
	rng   *rand.Rand
	pl    planner
	kube  client.Client
	ns    string
	w     *world
	sup   *supervisor
	t     *tally
	plans map[string]jobPlan // by job name
	seq   int
	log   localrun.Logf
}

// jobRef is a job as the chaos picks it: from the world, under its lock.
type jobRef struct {
	kind, name string
	uid        types.UID
	finished   bool
	paused     bool
	plan       jobPlan
}

// run acts at random until the end of the chaos phase.
func (c *chaos) run(ctx context.Context, until time.Time) error {
	for time.Now().Before(until) {
		wait := c.o.actionMin + time.Duration(c.rng.Int64N(int64(c.o.actionMax-c.o.actionMin)+1))
		if err := localrun.Sleep(ctx, wait); err != nil {
			return err
		}
		if err := c.act(ctx); err != nil {
			return err
		}
	}
	return nil
}

// act draws one action by weight among those possible now.
func (c *chaos) act(ctx context.Context) error {
	jobs, pods := c.snapshot()
	var running, finished, paused, elastic []jobRef
	for _, j := range jobs {
		switch {
		case j.finished:
			finished = append(finished, j)
		case j.paused:
			paused = append(paused, j)
		default:
			running = append(running, j)
			if j.plan.elastic != nil {
				elastic = append(elastic, j)
			}
		}
	}
	type choice struct {
		weight float64
		do     func() error
	}
	full := len(jobs) >= c.o.maxJobs
	choices := []choice{
		{weight: when(!full, 4), do: func() error { return c.create(ctx) }},
		{weight: when(len(jobs) > 0, 1) + when(full, 4) + when(len(finished) > 3, 2), do: func() error { return c.deleteJob(ctx, finished, jobs) }},
		{weight: when(len(elastic) > 0, 3), do: func() error { return c.scale(ctx, pick(c.rng, elastic)) }},
		{weight: when(len(running) > 0, 1.5), do: func() error { return c.pause(ctx, pick(c.rng, running), true) }},
		{weight: when(len(paused) > 0, 2), do: func() error { return c.pause(ctx, pick(c.rng, paused), false) }},
		{weight: when(len(pods) > 0, 2.5), do: func() error { return c.exitPod(ctx, pick(c.rng, pods)) }},
		{weight: when(len(pods) > 0, 1), do: func() error { return c.deletePod(ctx, pick(c.rng, pods)) }},
	}
	total := 0.0
	for _, ch := range choices {
		total += ch.weight
	}
	if total == 0 {
		return nil
	}
	x := c.rng.Float64() * total
	for _, ch := range choices {
		if x < ch.weight {
			return ch.do()
		}
		x -= ch.weight
	}
	return nil
}

func when(ok bool, weight float64) float64 {
	if ok {
		return weight
	}
	return 0
}

func pick[T any](rng *rand.Rand, items []T) T { return items[rng.IntN(len(items))] }

// snapshot lists the jobs that exist, and the pods of unfinished jobs that run, in a fixed order
// (so that a seed replays the same choices given the same world).
func (c *chaos) snapshot() ([]jobRef, []*podRecord) {
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	var jobs []jobRef
	open := map[types.UID]bool{}
	for _, j := range c.w.jobs {
		if !j.exists() || !j.deleted.IsZero() {
			continue
		}
		ref := jobRef{kind: j.kind, name: j.name, uid: j.uid, finished: terminalPhase(j.st.phase), paused: j.spec.paused, plan: c.plans[j.name]}
		jobs = append(jobs, ref)
		if !ref.finished {
			open[j.uid] = true
		}
	}
	sort.Slice(jobs, func(a, b int) bool { return jobs[a].name < jobs[b].name })
	var pods []*podRecord
	for _, p := range c.w.pods {
		if open[p.jobUID] && p.live() && p.phase == corev1.PodRunning {
			copied := *p
			pods = append(pods, &copied)
		}
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].name < pods[b].name })
	return jobs, pods
}

func (c *chaos) create(ctx context.Context) error {
	c.seq++
	kind := pick(c.rng, allKinds)
	p := c.pl.plan(kind, fmt.Sprintf("%s-%04d", namePrefix[kind], c.seq))
	c.plans[p.name] = p
	if c.refused(c.kube.Create(ctx, p.object(c.ns)), "create", p.describe()) {
		return nil
	}
	c.t.add(func(t *tally) { t.created[kind]++ })
	c.log("create %s", p.describe())
	return nil
}

// deleteJob deletes a finished job mostly, else any.
func (c *chaos) deleteJob(ctx context.Context, finished, all []jobRef) error {
	j := pick(c.rng, all)
	if len(finished) > 0 && c.rng.Float64() < 0.7 {
		j = pick(c.rng, finished)
	}
	c.w.mu.Lock()
	c.w.jobs[j.uid].deleted = time.Now()
	c.w.mu.Unlock()
	err := c.kube.Delete(ctx, c.emptyJob(j), client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.uid})
	if c.refused(err, "delete", j.name) {
		return nil
	}
	c.t.add(func(t *tally) { t.deletes++ })
	c.log("delete %s %s (finished: %v)", j.kind, j.name, j.finished)
	return nil
}

// scale sets an elastic job's size through its scale subresource, as kubectl scale and an HPA
// do: a PyTorchTrainingJob's expectedReplicas (every pod), a PyTorchJob's Worker replicas.
func (c *chaos) scale(ctx context.Context, j jobRef) error {
	e := j.plan.elastic
	n := e.min + c.rng.Int32N(e.max-e.min+1)
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)
	err := c.kube.SubResource("scale").Patch(ctx, c.emptyJob(j), client.RawPatch(types.MergePatchType, patch))
	if c.refused(err, "scale", j.name) {
		return nil
	}
	c.t.add(func(t *tally) { t.scales++ })
	c.log("scale %s %s to %d", j.kind, j.name, n)
	return nil
}

// pause pauses (T9k runMode.pause) or suspends (Kubeflow runPolicy.suspend) a job, or resumes it.
func (c *chaos) pause(ctx context.Context, j jobRef, on bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"runMode":{"pause":{"enabled":%v}}}}`, on)
	if j.kind == kindPT || j.kind == kindTF {
		patch = fmt.Appendf(nil, `{"spec":{"runPolicy":{"suspend":%v}}}`, on)
	}
	err := c.kube.Patch(ctx, c.emptyJob(j), client.RawPatch(types.MergePatchType, patch))
	verb := map[bool]string{true: "pause", false: "resume"}[on]
	if c.refused(err, verb, j.name) {
		return nil
	}
	c.t.add(func(t *tally) {
		if on {
			t.pauses++
		} else {
			t.resumes++
		}
	})
	c.log("%s %s %s", verb, j.kind, j.name)
	return nil
}

// exitPod makes a running pod exit at once with a random code, as a crash or an OOM kill would.
func (c *chaos) exitPod(ctx context.Context, p *podRecord) error {
	code := c.pl.exitCode()
	// Note: KWOK counts run-duration from the pod's last change, so it is set to 0 with the code.
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"0s",%q:"%d"}}}`, simRunDuration, simExitCode, code)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: p.name}}
	err := c.kube.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch))
	if c.refused(err, "exit", p.name) {
		return nil
	}
	c.t.add(func(t *tally) { t.podExits++ })
	c.log("exit pod %s with code %d", p.name, code)
	return nil
}

// deletePod deletes a running pod by hand, as a drain or a user would.
func (c *chaos) deletePod(ctx context.Context, p *podRecord) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: p.name}}
	err := c.kube.Delete(ctx, pod, client.Preconditions{UID: &p.uid})
	if c.refused(err, "delete pod", p.name) {
		return nil
	}
	c.t.add(func(t *tally) { t.podDeletes++ })
	c.w.markByHand(p.uid)
	c.log("delete pod %s", p.name)
	return nil
}

// refused counts an action the API server refused; the chaos goes on (the job may have finished
// or gone since the snapshot).
func (c *chaos) refused(err error, verb, name string) bool {
	if err == nil {
		return false
	}
	msg := fmt.Sprintf("%s %s refused: %v", verb, name, err)
	c.t.add(func(t *tally) {
		t.refused++
		if len(t.refusals) < 10 {
			t.refusals = append(t.refusals, msg)
		}
	})
	c.log("%s", msg)
	return true
}

func (c *chaos) emptyJob(j jobRef) client.Object {
	meta := metav1.ObjectMeta{Namespace: c.ns, Name: j.name}
	switch j.kind {
	case kindPTJ:
		return &batch.PyTorchTrainingJob{ObjectMeta: meta}
	case kindTFJ:
		return &batch.TensorFlowTrainingJob{ObjectMeta: meta}
	case kindPT:
		return &kubeflowv1.PyTorchJob{ObjectMeta: meta}
	default:
		return &kubeflowv1.TFJob{ObjectMeta: meta}
	}
}

// killer kills the operator every killMin to killMax of its uptime and starts a new one after a
// few seconds, until the end of the chaos phase.
func (c *chaos) killer(ctx context.Context, rng *rand.Rand, until time.Time) error {
	if c.o.killMax <= 0 {
		return nil
	}
	for {
		every := c.o.killMin + time.Duration(rng.Int64N(int64(c.o.killMax-c.o.killMin)+1))
		if left := time.Until(until); every >= left {
			return nil // no kill is due before the chaos ends
		}
		if err := localrun.Sleep(ctx, every); err != nil {
			return nil
		}
		downtime := time.Duration(1+rng.IntN(8)) * time.Second
		if err := c.sup.killAndRestart(ctx, downtime); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("killing and restarting the operator: %w", err)
		}
		c.t.add(func(t *tally) { t.kills++ })
	}
}

// liveJobs lists the jobs that exist, for the final deletion.
func (c *chaos) liveJobs() []jobRef {
	jobs, _ := c.snapshot()
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	for _, j := range c.w.jobs {
		if j.exists() && !j.deleted.IsZero() && !slices.ContainsFunc(jobs, func(r jobRef) bool { return r.uid == j.uid }) {
			jobs = append(jobs, jobRef{kind: j.kind, name: j.name, uid: j.uid})
		}
	}
	return jobs
}
