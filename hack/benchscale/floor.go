package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// The floor: the pods a size's jobs would have (the same count, resources and simulation
// annotations) created straight by a bare client, with no operator, so that the operator's time
// to every job Running reads against what the cluster itself takes.

// Labels of the floor's pods. Note: they carry none of the operator's labels (it watches only
// pods with tensorstack.dev/owner-kind) and no owner, so no operator ever acts on them.
const (
	// floorGroupLabel names the "job" a floor pod stands for; a group is Running once all its
	// pods run.
	floorGroupLabel = "bench.trainyard.dev/floor-group"
	// floorRoleLabel is master or worker.
	floorRoleLabel = "bench.trainyard.dev/floor-role"
	// floorPodLabel is the pod's name: the selector of its Service, when the floor has Services.
	floorPodLabel = "bench.trainyard.dev/floor-pod"
	// floorAgent is the floor client's user agent (the audit log tells its requests apart by it).
	floorAgent = "benchscale-floor"
)

// floorServices says which Services a floor creates beside its pods.
type floorServices int

const (
	// podsAlone: no Service, issue 19's floor, the one the targets read against.
	podsAlone floorServices = iota
	// servicePerGroup: before the pods, a headless Service per group selecting all its pods, as
	// a T9k job has (SPEC: the job's Service, its pods' DNS names). A Service that selects a pod
	// makes the kube-scheduler spread it by default (PodTopologySpread's system defaults take
	// their selector from the Services selecting the pod), so each binding counts the matching
	// pods on every node: the cost of the Service the T9k API needs, told from the operator's.
	servicePerGroup
	// servicePerPod: after the pods, a headless Service per pod selecting it, as the kubeflow.org
	// kinds have.
	servicePerPod
)

// floorResult is what the floor took at one size.
type floorResult struct {
	size     size
	services floorServices
	created  time.Time
	// allPodsExist: the first create call → the last pod first seen; allRunning: → the last pod
	// first seen Running, which is also when the last group had all its pods running.
	allPodsExist, allRunning figure
	// controlPlane is the CPU seconds each of the cluster's processes used from the first create
	// until every pod ran (nil: not read).
	controlPlane localrun.ProcessCPU
	end          time.Time // every pod gone
	apfRejected  float64
	apfOK        bool
	broke        string
}

func (f floorResult) windowName() string { return "floor " + f.variant() }

// fileName names the floor's files (the API server's profile): "floor-200x8",
// "floor-200x8-service-per-job", "floor-200x8-services".
func (f floorResult) fileName() string {
	suffix := map[floorServices]string{servicePerGroup: "-service-per-job", servicePerPod: "-services"}[f.services]
	return "floor-" + f.size.String() + suffix
}

// variant names the size and the floor's Services: "200x8", "200x8 with a Service per job",
// "200x8 with Services" (a Service per pod).
func (f floorResult) variant() string {
	switch f.services {
	case servicePerGroup:
		return f.size.String() + " with a Service per job"
	case servicePerPod:
		return f.size.String() + " with Services"
	}
	return f.size.String()
}

// title is the floor table's name of the size: "200 jobs x 8 (1,600 pods)", "… and a Service
// per job (T9k)", "… and a Service per pod (kubeflow.org)".
func (f floorResult) title() string {
	switch f.services {
	case servicePerGroup:
		return f.size.title() + " and a Service per job selecting its pods (T9k)"
	case servicePerPod:
		return f.size.title() + " and a Service per pod (kubeflow.org)"
	}
	return f.size.title()
}

// floorVariants: the pods alone; with the T9k kinds' Service per job when the t9k API is played,
// and with the kubeflow.org kinds' Service per pod when that API is. The Services cost the
// cluster (the scheduler's default spreading, the API server, the endpoints controllers) while
// the scheduler binds; these floors tell that cost from the operator's.
func (c *comparison) floorVariants() []floorServices {
	variants := []floorServices{podsAlone}
	if slices.Contains(c.o.apis, apiT9k) {
		variants = append(variants, servicePerGroup)
	}
	if slices.Contains(c.o.apis, apiKubeflow) {
		variants = append(variants, servicePerPod)
	}
	return variants
}

// runFloor plays every size with the bare client, in a namespace of its own.
func (c *comparison) runFloor(ctx context.Context) error {
	ns, err := c.namespace(ctx, "floor")
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(c.id.Config)
	// Note: a negative QPS turns client-go's rate limiter off; the ServiceAccount token keeps the
	// floor's requests in the operator's APF flow.
	cfg.QPS, cfg.Burst, cfg.UserAgent = -1, 0, floorAgent
	kube, err := client.New(cfg, client.Options{Scheme: c.conn.Scheme})
	if err != nil {
		return err
	}
	t := newTrackerOf(floorGroupLabel, floorRoleLabel)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := watchBothAPIs(wctx, c.conn, ns, t); err != nil {
		return err
	}
	b := &bench{o: c.o, res: &results{}, kube: c.conn.Kube, ns: ns, t: t}
	for _, s := range c.o.sizes {
		if s.mixed() {
			continue // a mixed size has no floor of its own: its parts' figures are read beside its parts played alone
		}
		for _, services := range c.floorVariants() {
			f := floorResult{size: s, services: services}
			err := c.settle(ctx, f.windowName())
			if err == nil {
				err = c.floorSize(ctx, b, kube, &f)
			}
			if err != nil {
				f.broke = err.Error()
			}
			c.floors = append(c.floors, f)
			if err != nil {
				return fmt.Errorf("%s: %w", f.windowName(), err)
			}
		}
	}
	return nil
}

// floorSize creates the size's pods with --floor-concurrency goroutines (then, for a floor with
// Services, a Service per pod), waits until every pod runs, then deletes them and waits until
// they are gone.
func (c *comparison) floorSize(ctx context.Context, b *bench, kube client.Client, f *floorResult) error {
	s := f.size
	b.t.reset()
	// Note: each variant has its own pod names. KWOK keeps a deleted pod's pending stage by name:
	// a master deleted while Running was seen to end its successor of the same name, created
	// seconds later, as Succeeded before the scheduler had bound it (so never seen Running).
	prefix := map[floorServices]string{podsAlone: "f", servicePerGroup: "fg", servicePerPod: "fs"}[f.services]
	names, groups := make([]string, 0, s.pods()), make([]string, 0, s.jobs)
	for g := range s.jobs {
		group := prefix + s.jobName(g)[1:]
		groups = append(groups, group)
		for i := range s.podsPerJob {
			names = append(names, fmt.Sprintf("%s-%d", group, i))
		}
	}
	rejected, okBefore := c.apfRejected(ctx)
	cpBefore := c.readControlPlane()
	logf("%s: creating %d pods, %d at a time, no client rate limit", f.windowName(), len(names), c.o.floorConcurrency)
	createServices := func(names []string, selector string) error {
		return parallel(ctx, c.o.floorConcurrency, names, func(ctx context.Context, name string) error {
			if err := kube.Create(ctx, floorService(b.ns, name, selector)); err != nil {
				return fmt.Errorf("creating Service %s: %w", name, err)
			}
			return nil
		})
	}
	defer c.profileControlPlane(ctx, f.fileName(), f.windowName()).Wait()
	f.created = time.Now()
	var err error
	if f.services == servicePerGroup {
		err = createServices(groups, floorGroupLabel)
	}
	if err == nil {
		err = parallel(ctx, c.o.floorConcurrency, names, func(ctx context.Context, name string) error {
			if err := kube.Create(ctx, floorPod(b.ns, name, s, c.o.masterRun)); err != nil {
				return fmt.Errorf("creating pod %s: %w", name, err)
			}
			return nil
		})
	}
	if err == nil && f.services == servicePerPod {
		err = createServices(names, floorPodLabel)
	}
	if err == nil {
		timeout := c.o.phaseTimeout + time.Duration(s.pods())*60*time.Millisecond
		err = b.waitFor(ctx, f.windowName()+": every pod Running", timeout, func() (bool, string) {
			seen, running := floorCounts(b.t)
			return running >= len(names), fmt.Sprintf("%d of %d pods exist, %d running", seen, len(names), running)
		})
	}
	f.controlPlane = c.controlPlaneSince(cpBefore)
	writeTimeline(filepath.Join(c.o.dir, "timeline-floor-"+strings.ReplaceAll(f.variant(), " ", "-")+".tsv"), b.t, f.created, nil)
	var lastSeen, lastRunning time.Time
	b.t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
		for _, p := range pods {
			lastSeen = later(lastSeen, p.seen)
			lastRunning = later(lastRunning, p.running)
		}
	})
	seen, running := floorCounts(b.t)
	f.allPodsExist, f.allRunning = missing("%d of %d pods seen", seen, len(names)), missing("%d of %d pods seen Running", running, len(names))
	if seen >= len(names) {
		f.allPodsExist = measured(lastSeen.Sub(f.created))
	}
	if running >= len(names) {
		f.allRunning = measured(lastRunning.Sub(f.created))
	}
	derr := deletePods(ctx, b, b.ns, c.o.phaseTimeout+time.Duration(s.pods())*20*time.Millisecond)
	if services := map[floorServices][]string{servicePerGroup: groups, servicePerPod: names}[f.services]; len(services) > 0 {
		derr = errors.Join(derr, deleteServices(ctx, kube, b.ns, services, c.o.floorConcurrency))
	}
	f.end = time.Now()
	after, okAfter := c.apfRejected(ctx)
	f.apfRejected, f.apfOK = after-rejected, okBefore && okAfter
	return errors.Join(err, derr)
}

// floorCounts: the pods that exist, and those of them seen Running.
func floorCounts(t *tracker) (seen, running int) {
	t.view(func(pods map[string]*podRecord, _ map[string]*jobRecord) {
		for _, p := range pods {
			if !p.exists() {
				continue
			}
			seen++
			if !p.running.IsZero() {
				running++
			}
		}
	})
	return seen, running
}

// floorPod is a pod of the shape the operator would create for the size: the job's pod template
// (one GPU, the tiny requests), the burst master's simulation annotations, restartPolicy Never as
// the operator writes on every pod (it restarts replicas itself). name is <group>-<index>.
func floorPod(ns, name string, s size, masterRun time.Duration) *corev1.Pod {
	i := strings.LastIndexByte(name, '-')
	group, index := name[:i], name[i+1:]
	role, annotations := "worker", map[string]string(nil)
	if index == "0" {
		role = "master"
		if s.burst() && masterRun > 0 {
			annotations = map[string]string{simRunDuration: masterRun.String(), simExitCode: "0"}
		}
	}
	t := gpuPodTemplate(annotations)
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: t.Annotations,
			Labels: map[string]string{floorGroupLabel: group, floorRoleLabel: role, floorPodLabel: name}},
		Spec: t.Spec,
	}
}

// floorService is a floor's Service name, selecting the pods whose label key is name: headless
// and publishing its pods before they are ready, as the Services of both APIs' kinds are. Keyed
// by floorPodLabel it selects one pod, as a kubeflow.org kind's per-replica Service does; by
// floorGroupLabel, a group's pods, as a T9k job's Service does.
func floorService(ns, name, key string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{key: name},
			Ports:                    []corev1.ServicePort{{Name: "floor", Port: 23456}},
		},
	}
}
