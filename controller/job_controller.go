package controller

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/apply"
	"github.com/trainyard/trainyard/render"
	"github.com/trainyard/trainyard/status"
)

// maxPodsPerRound bounds the pods one round renders and creates. A 5,000-pod job's pods, rendered
// at once, were most of the operator's peak memory; a slice per round also lets other jobs'
// rounds in between.
const maxPodsPerRound = 500

// Field managers: one for the objects a job owns, one for the jobs' status.
const (
	FieldManager       = "trainyard"
	StatusFieldManager = "trainyard-status"
)

// ownedFinder finds the objects a job controls.
type ownedFinder[T any] interface {
	of(job types.UID) ([]*T, error)
}

// jobReconciler runs one job kind: it reads the job and what it owns, asks render what should
// exist, has apply make it so, and writes the status that status derives. It decides nothing.
type jobReconciler struct {
	client client.Client
	// reader reads from the API server, past the cache.
	reader  client.Reader
	kind    jobKind
	applier *apply.Applier
	exp     *apply.Expectations
	// pods and services find a job's pods and Services in the cache (byController).
	pods     ownedFinder[corev1.Pod]
	services ownedFinder[corev1.Service]
	// svcExp are the expectations of a Kubeflow job's per-replica Services.
	svcExp   *apply.Expectations
	recorder events.EventRecorder
	metrics  *metrics
	crds     *crdTracker
	// kueue runs Kueue's job protocol for a T9k kind's queued jobs; for the Kubeflow kinds, which
	// Kueue runs itself, it only reads the Workload Kueue made for a job.
	kueue *kueueSync
	// kinds are the job kinds served: a job of another kind may hold this job's name (names.go).
	kinds *kindRegistry
	// createParallelism bounds the pod creations (and deletions) in flight for one job.
	createParallelism int
	// statusInterval is the least time between two status writes of a job that change only
	// counts; phase, conditions and counters are written at once.
	statusInterval time.Duration
	// clusterDomain is the cluster's DNS domain (--cluster-domain).
	clusterDomain string
	// nodeLostAfter is how long a node may be not Ready before its pods are lost (--node-lost-after).
	nodeLostAfter time.Duration
	// shares bounds a job's pods waiting for the scheduler: its share of the operator's bound
	// (--max-unscheduled-pods, --max-unscheduled-pods-per-job); nil: no bound.
	shares *schedulerShares
	// deletions knows which pods someone else deleted.
	deletions *deletionTracker
	// retry brings a job back whose background clean-up failed (deleteInBackground).
	retry chan event.GenericEvent
	// releasing counts the deleted jobs' deletions under way (releaseDeleted), for tests to wait on.
	releasing sync.WaitGroup
	now       func() time.Time

	mu sync.Mutex
	// jobs is what the reconciler remembers of each job it has seen, by UID; names maps a job's
	// name to its UID, to forget it once it is gone.
	jobs  map[types.UID]*jobMemory
	names map[types.NamespacedName]types.UID
}

// jobMemory is what the reconciler keeps of one job between reconciles.
type jobMemory struct {
	// written is the last status write; it stands in for the cache's copy until the cache shows
	// it (only the operator writes the status).
	written writtenStatus
	// warnedGeneration is the generation whose warnings were recorded.
	warnedGeneration int64
	// pods is the number of pods the job wants, as of its last round (its pod events' coalescing
	// window grows with it: coalesceFor).
	pods int
	// allCreated: the time from creation to all pods created has been observed.
	allCreated bool
	// podGroupGone: the PodGroup has been deleted since render stopped wanting it.
	podGroupGone bool
	// autoscalerGone: the HPA has been looked up, and deleted if the job owned one, since render
	// stopped wanting it, at this generation of the job (0: not since).
	autoscalerGone int64
	// servicesInSync: a Kubeflow job's per-replica Services were all there, and none extra, for
	// this generation and this many desired (see syncReplicaServices).
	servicesInSync *servicesSync
	// servicesSeen: the job's Services (by name) last found as render wants them.
	servicesSeen map[string]serviceSeen
	// createRefused is the API server's refusal of the job's last pod creation, until pods are
	// created again: the Waiting condition's CreateFailed message.
	createRefused status.Refusal
	// refusals counts the job's rounds in a row whose writes the API server refused.
	refusals int
	// nameTaken says which object of the job another holds the name of (nameTakenError), until
	// a round's writes all go through.
	nameTaken string
	// tensorBoardTaken says who holds the name of the job's TensorBoard Deployment, until a
	// round's writes all go through: status.tensorboard's note.
	tensorBoardTaken string
	// tensorBoardRefused is the API server's refusal of the job's TensorBoard Deployment, until
	// an apply of it goes through: status.tensorboard's note.
	tensorBoardRefused string
	// gangRefused is the API server's refusal of the job's last gang object apply, until one
	// succeeds: the Waiting condition's CreateFailed message (no pod is created without it).
	gangRefused string
	// deleted: the job's deletion has been seen (jobDeleted).
	deleted bool
	// released: the job's pods and Services have been sent for deletion (releaseDeleted).
	released bool
	// creating holds the cancels of the job's creations under way (untilDeleted); jobDeleted
	// calls them itself, so that no new creation is sent once it returns.
	creating map[*byte]context.CancelCauseFunc
}

// podsOf is the number of pods the job of uid wants, as of its last round (0 before its first).
func (r *jobReconciler) podsOf(uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.jobs[uid]; m != nil {
		return m.pods
	}
	return 0
}

// holdsPods reports whether the job of uid held pods back for the scheduler in its last round:
// a binding of one of its pods then makes room for another creation, and wakes it.
func (r *jobReconciler) holdsPods(uid types.UID) bool {
	return r.shares.paces(uid)
}

// memory is the job's record, created on first use. The caller holds r.mu.
func (r *jobReconciler) memory(uid types.UID) *jobMemory {
	m := r.jobs[uid]
	if m == nil {
		m = &jobMemory{}
		r.jobs[uid] = m
	}
	return m
}

// serviceSeen is a Service found as render wants it: at this generation of the job, this
// resourceVersion of the Service.
type serviceSeen struct {
	generation      int64
	resourceVersion string
}

// writtenStatus is the operator's last status write of a job: when, and until the cache shows
// it, what it wrote and the resourceVersion it produced.
type writtenStatus struct {
	at time.Time
	// took is how long the write took, from the request to the answer.
	took            time.Duration
	status          *batch.TrainingJobStatus
	resourceVersion string
}

// Reconcile brings one job's objects and status in line with render's answer.
func (r *jobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	job := r.kind.newJob()
	if err := r.client.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if job.GetDeletionTimestamp() != nil {
		r.shares.set(job.GetUID(), false, 0) // it creates no more pods
		return ctrl.Result{}, nil            // the garbage collector removes what it owns
	}
	if !r.kind.managed(job) {
		logger.V(1).Info("left alone: managedBy names another controller")
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	job.GetObjectKind().SetGroupVersionKind(r.kind.gvk)
	uid := job.GetUID()
	// The job's writes share the operator's write gate with other jobs' (apply.WriteGate).
	ctx = apply.WithOwner(ctx, string(uid))
	now := r.now()
	cached := r.kind.status(job)
	current := r.currentStatus(job, &cached)
	model := r.kind.model(job)
	model.Status = current
	r.mu.Lock()
	r.names[req.NamespacedName] = uid
	r.memory(uid).pods = int(model.PodCount())
	r.mu.Unlock()

	listed, err := r.ownedPods(job)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods := apply.Observe(r.exp, string(uid), listed, now)
	installed := r.crds.installed()
	queued, workload, err := r.kueue.observe(ctx, job, &model, installed)
	notServed := errors.Is(err, errKueueNotServed)
	if notServed {
		// Taken as not installed until served: the job reads as before the CRD came.
		logger.V(1).Info("Kueue's Workload CRD is installed but its kind not served yet: taken as not installed for now")
		installed = maps.Clone(installed)
		delete(installed, kueue.WorkloadCRD)
		err = nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	model = render.AdmittedJob(model, queued) // the size Kueue admitted, for status as for render
	deleted := r.deletions.deletedPods(uid)
	taken, err := r.nameTakenBy(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	part, room := r.shares.parts(uid)
	out, renderErr := render.Render(render.Input{
		Job: model, Pods: pods, InstalledCRDs: installed, Kueue: queued, Now: now, ClusterDomain: r.clusterDomain, NameTakenBy: taken,
		OnlyPodsToCreate: true, MaxPodsToCreate: maxPodsPerRound,
		DeletedPods: deleted, Nodes: r.nodeStates(ctx, &model, pods), NodeLostAfter: r.nodeLostAfter,
		MaxUnscheduledPods: part, SchedulerRoom: room,
	})

	// Known before the round creates pods, whose bindings then wake the job (holdsPods).
	if renderErr == nil && out.Decisions.HeldForScheduler > 0 {
		r.shares.set(uid, true, int(out.Decisions.WaitingForScheduler)+len(out.Decisions.Create))
	} else {
		r.shares.set(uid, false, 0)
	}
	if renderErr == nil && r.recreating(ctx, job, &model, out) && !r.stillExists(ctx, job) {
		logger.V(1).Info("the job is gone; its cache entry is stale")
		return ctrl.Result{}, nil
	}
	if renderErr != nil {
		logger.V(1).Info("render refused the job", "error", renderErr)
	}
	if renderErr == nil && out.Decisions.Dispatched {
		// MultiKueue runs the job in a worker cluster and writes its status: only its Workload
		// is kept here (render/multikueue.go).
		return ctrl.Result{}, r.kueue.sync(ctx, job, out, workload)
	}
	var tb *appsv1.Deployment
	if renderErr == nil && out.TensorBoard != nil {
		tb = r.liveDeployment(ctx, job, out.TensorBoard.Deployment)
	}
	waiting := r.waitingInputs(ctx, job, &model, out, pods, tb)
	derive := status.Input{
		Job: &model, Generation: job.GetGeneration(), Current: current, Pods: pods,
		Out: out, RenderErr: renderErr, TensorBoard: tb, TensorBoardPods: waiting.tensorBoard,
		Gang: waiting.gang, CreateRefused: waiting.createRefused, GangRefused: waiting.gangRefused, NameTaken: waiting.nameTaken, TensorBoardTaken: waiting.tensorBoardTaken, TensorBoardRefused: waiting.tensorBoardRefused, Now: now,
	}
	next := status.Derive(derive)
	result := ctrl.Result{}
	if renderErr == nil && out.Decisions.RequeueAfter != nil {
		result.RequeueAfter = out.Decisions.RequeueAfter.Duration
	}
	if waiting.recheck && (result.RequeueAfter == 0 || waitingRecheck < result.RequeueAfter) {
		result.RequeueAfter = waitingRecheck
	}
	if notServed && (result.RequeueAfter == 0 || kueueNotServedRecheck < result.RequeueAfter) {
		result.RequeueAfter = kueueNotServedRecheck
	}

	// An outcome is recorded before the clean-up it starts, so it is not held up by the deletions
	// (and, being sticky, the clean-up resumes after a crash); so is a gang restart, whose new
	// gangRestarts makes render delete the old gang's pods again if this process stops half-way.
	// Otherwise the objects come first: a restart's deletion precedes its count, which is then
	// never counted twice.
	var act actions
	var written bool
	var wait time.Duration
	finishing := finished(next.Phase) && !finished(current.Phase)
	if finishing || (renderErr == nil && out.Decisions.GangRestart) {
		if written, wait, err = r.writeStatus(ctx, job, &model, &current, &next, false, now); err != nil {
			return result, err
		}
	}
	if renderErr == nil {
		if out.Decisions.DeleteJob {
			// ttlSecondsAfterFinished is over: the job goes, and the garbage collector takes
			// what it owns.
			logger.Info("deleting the job: ttlSecondsAfterFinished has passed since it finished")
			return result, r.applier.Delete(apply.WithCleanUp(ctx), job, uid, false)
		}
		act = r.act(ctx, job, &model, out)
		if act.gone {
			return ctrl.Result{}, act.err
		}
		r.rememberCreate(uid, act.created, act.createErr)
		r.rememberNameTaken(uid, act.err)
		act.err = errors.Join(act.err, r.kueue.sync(ctx, job, out, workload))
	}
	if !finishing && (renderErr != nil || !out.Decisions.GangRestart) {
		if len(act.created) > 0 {
			// The status derived before the round counts the pods it has just created as still to
			// create: derived again with them (the expectations hold them until the cache has them),
			// it says they exist, and the next round has no write of counts alone to make. In a
			// burst, whose creations outlast a new job's first status wait, that was a second
			// write for most jobs (docs/benchmarks.md, "A new job's first status counts the pods
			// its round created").
			derive.Pods = apply.Observe(r.exp, string(uid), listed, now)
			next = status.Derive(derive)
		}
		cleaning := renderErr == nil && cleaningUp(out, pods)
		if written, wait, err = r.writeStatus(ctx, job, &model, &current, &next, cleaning, now); err != nil {
			return result, errors.Join(act.err, err)
		}
	}
	// A big job is created a slice per round (maxPodsPerRound): the next round follows at once,
	// behind the rounds of other jobs already waiting.
	if renderErr == nil && act.err == nil && !act.gone && (len(out.Decisions.Create) > len(out.Pods) || act.moreServices) {
		result.RequeueAfter = time.Millisecond
	}
	// The deleted pods render was given are accounted for in the status now, once gone.
	r.deletions.handled(uid, deleted, pods)
	if wait > 0 && (result.RequeueAfter == 0 || wait < result.RequeueAfter) {
		result.RequeueAfter = wait
	}

	warn := r.firstRoundOf(uid, job.GetGeneration())
	recordEvents(r.recorder, job, out, act.created, status.Events(status.Round{
		Prev: &current, Next: &next, Out: out, RenderErr: renderErr, Job: &model,
		Created: act.created, CreateErr: cmp.Or(act.createErr, act.gangErr), Warn: warn, Written: written,
	}))
	r.record(job, &model, out, &next, act, now)
	refused := act.err != nil && onlyRefusals(act.err)
	r.mu.Lock()
	m := r.memory(uid)
	if refused {
		m.refusals++
	} else {
		m.refusals = 0
	}
	tries := m.refusals
	r.mu.Unlock()
	if refused {
		// Note: the fix (a quota raised, a namespace's Pod Security level, a policy removed, a
		// name freed) wakes no job, and the error backoff would wait up to 16 minutes by then.
		// A refusal is tried again after 1, 2, 4 ... seconds, then every refusedRecheck, and said
		// in the status and events.
		again := min(refusedRecheck, time.Second<<min(tries-1, 10))
		logger.Info("the API server refused what the job needs; tried again shortly", "after", again, "error", act.err.Error())
		if result.RequeueAfter == 0 || again < result.RequeueAfter {
			result.RequeueAfter = again
		}
		return result, nil
	}
	if act.err != nil {
		return ctrl.Result{}, act.err // retried with the error backoff (a result beside it is ignored)
	}
	return result, nil
}

// refusedRecheck is the longest a job whose objects the API server refused waits to try them again.
const refusedRecheck = 20 * time.Second

// onlyRefusals: every error err joins is a refusal someone must fix (refusal) or a name another
// object holds (nameTakenError), none a failure that retrying soon may mend.
func onlyRefusals(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !onlyRefusals(e) {
				return false
			}
		}
		return true
	}
	var taken *nameTakenError
	return refusal(err) || errors.As(err, &taken)
}

// recreating reports whether render wants to create again something the job had: pods of a job
// that has started, or its Service once gone. That is also what a job deleted a moment ago looks
// like from a cache that has not seen the deletion yet, while the garbage collector removes its
// objects: so before acting the job's existence is checked on the server (stillExists).
func (r *jobReconciler) recreating(ctx context.Context, job client.Object, model *render.Job, out *render.Output) bool {
	if model.Status.StartTime == nil {
		return false
	}
	if len(out.Decisions.Create) > 0 {
		return true
	}
	if out.Service == nil {
		return false
	}
	var svc corev1.Service
	return apierrors.IsNotFound(r.client.Get(ctx, client.ObjectKeyFromObject(out.Service), &svc))
}

// stillExists reads the job from the API server, past the cache: false when it is gone or has been
// replaced by another of the same name.
func (r *jobReconciler) stillExists(ctx context.Context, job client.Object) bool {
	live := r.kind.newJob()
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(job), live)
	if err != nil {
		return !apierrors.IsNotFound(err) // on other errors, act as the cache says
	}
	return live.GetUID() == job.GetUID() && live.GetDeletionTimestamp() == nil
}

// ownedPods lists the pods the job controls, from the cache's index of pods by controller UID.
// Note: they are the cache's own objects (a deep copy, for a 1,000-pod job, was most of the
// garbage of a reconcile): render, status and the expectations only read them, and Observe
// copies a pod before marking it.
func (r *jobReconciler) ownedPods(job client.Object) ([]*corev1.Pod, error) {
	return r.pods.of(job.GetUID())
}

// actions is what act did.
type actions struct {
	created   []string
	createErr error
	gangErr   error          // the gang object's apply failed: no pod was created
	deleted   map[string]int // by reason
	gone      bool           // the job was deleted while its pods were created: no status to write
	// moreServices: a Kubeflow job's per-replica Services are still to be created (a slice per round).
	moreServices bool
	err          error
}

// act makes the cluster hold render's objects: the Service, the PodGroup and the TensorBoard by
// server-side apply; the pods render deletes, then the pods it creates.
func (r *jobReconciler) act(ctx context.Context, job client.Object, model *render.Job, out *render.Output) actions {
	var a actions
	// The Service and the TensorBoard go out beside the pods: nothing waits on them. The PodGroup
	// must exist before any pod (the gang scheduler reads it), so it comes first.
	dependents := make(chan error, 1)
	servicesNow := r.replicaServicesNow(job.GetUID(), out)
	go func() {
		var err error
		a.moreServices, err = r.applyDependents(ctx, job, model, out, servicesNow)
		dependents <- err
	}()
	var errs []error
	podGroupReady := true
	if a.gangErr = r.applyPodGroup(ctx, job, model, out); a.gangErr != nil {
		errs = append(errs, a.gangErr)
		podGroupReady = false
	}
	r.rememberGang(job.GetUID(), a.gangErr)
	a.deleted, errs = r.deletePods(ctx, job, out.Decisions.Delete, errs)
	if podGroupReady && len(out.Decisions.Create) > 0 {
		a.created, a.createErr = r.createPods(ctx, job, out)
		switch {
		case namespaceTerminating(a.createErr):
			// The namespace controller is deleting the namespace, the job with it: nothing to retry.
			log.FromContext(ctx).V(1).Info("not creating pods: the namespace is being deleted")
			a.createErr = nil
		case errors.Is(a.createErr, errJobGone):
			log.FromContext(ctx).Info("stopped creating pods: the job was deleted", "created", len(a.created), "notCreated", len(out.Pods)-len(a.created))
			a.createErr, a.gone = nil, true
		}
		if a.createErr != nil {
			errs = append(errs, a.createErr)
		}
	}
	if err := <-dependents; !namespaceTerminating(err) {
		errs = append(errs, err)
	}
	a.err = errors.Join(errs...)
	return a
}

// replicaServicesNow: a Kubeflow job's missing per-replica Services that are due
// (ReplicaServices.Due) are created in this round. They wait while the round creates pods, unless
// the job's last pod creation was refused or its pods are paced to the scheduler.
//
// Why: pods first. The scheduler waits on the pods, and nothing waits on a Service until its
// pods run. In a burst of 200 jobs of 8, creating both side by side doubled the time to all
// pods existing (35.3 s against the T9k kind's 17.6 s), and every job Running came 14 s later.
// A job whose round created pods is queued again at once, behind the jobs already waiting, and
// its next round, which finds its pods, creates its Services. A refused creation (a quota, a
// webhook) would make every round one that creates pods: the Services then go beside them. So
// would a paced job's (a few pods a round while the scheduler binds), and each such round was
// followed by one at once for the Services, which mostly created more pods instead: the
// 5,000-pod job made 283 to 630 rounds in its start, against the T9k kind's 192. A paced job's
// due Services are those of its bound pods, and they go beside the round's new pods.
func (r *jobReconciler) replicaServicesNow(uid types.UID, out *render.Output) bool {
	if len(out.Pods) == 0 || out.Decisions.HeldForScheduler > 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.memory(uid).createRefused.Message != ""
}

// applyDependents applies the job's Service and TensorBoard, and a Kubeflow job's per-replica
// Services and HPA; more: per-replica Services are still to be created. The missing per-replica
// Services are created only when servicesNow (replicaServicesNow).
func (r *jobReconciler) applyDependents(ctx context.Context, job client.Object, model *render.Job, out *render.Output, servicesNow bool) (more bool, _ error) {
	var errs []error
	if err := r.applyService(ctx, job, job.GetName(), out.Service); err != nil {
		errs = append(errs, err)
	}
	if r.kind.gvk.Group == kubeflowv1.GroupVersion.Group {
		var err error
		if more, err = r.syncReplicaServices(ctx, job, out.ReplicaServices, servicesNow); err != nil {
			errs = append(errs, err)
		}
		if err := r.applyAutoscaler(ctx, job, model, out); err != nil {
			errs = append(errs, err)
		}
	}
	if tb := out.TensorBoard; tb != nil {
		var live client.Object // Note: a nil *Deployment in the interface would not be nil
		var taken error
		if d := r.liveDeployment(ctx, job, tb.Deployment); d != nil {
			live = d
		} else {
			// None of the job's: a new TensorBoard's, or the name is held by a Deployment the job
			// does not own. Apply would take that one over, or fail on its selector again and
			// again, so the server is asked first, as for Services.
			_, taken = r.nameHolder(ctx, job, tb.Deployment, func() client.Object { return &appsv1.Deployment{} })
		}
		if t, ok := taken.(*nameTakenError); ok {
			t.tensorBoard = true
		}
		if taken != nil {
			errs = append(errs, taken)
		} else {
			_, err := r.applier.Apply(ctx, tb.Deployment, live)
			if err != nil {
				errs = append(errs, err)
			}
			r.rememberTensorBoard(job.GetUID(), err)
		}
		if err := r.applyService(ctx, job, tb.Service.Name, tb.Service); err != nil {
			errs = append(errs, err)
		}
	} else if err := r.deleteTensorBoard(ctx, job); err != nil {
		errs = append(errs, err)
	}
	return more, errors.Join(errs...)
}

// deleteTensorBoard deletes the TensorBoard Deployment and Service the job owns and render no
// longer wants (its tensorboardSpec was removed), so that they do not run, unreported, until the
// job is deleted. Objects of that name the job does not own are left alone.
func (r *jobReconciler) deleteTensorBoard(ctx context.Context, job client.Object) error {
	name := render.TensorBoardName(job.GetName())
	if err := r.deleteOwned(ctx, r.client, job, name, &appsv1.Deployment{}); err != nil {
		return err
	}
	return r.applyService(ctx, job, name, nil)
}

// deleteOwned reads the object of that name in the job's namespace through reader (the cache, or
// the server for kinds not cached) into live, and deletes it if the job owns it; one it does not
// own, or none, is left as it is.
func (r *jobReconciler) deleteOwned(ctx context.Context, reader client.Reader, job client.Object, name string, live client.Object) error {
	err := reader.Get(ctx, types.NamespacedName{Namespace: job.GetNamespace(), Name: name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case ownedBy(live, job):
		return r.applier.Delete(ctx, live, live.GetUID(), false)
	}
	return nil
}

// applyAutoscaler applies render's HPA (an elastic Kubeflow PyTorchJob with metrics). HPAs are
// not cached: one render no longer wants is looked up once on the server and deleted. That is
// when the job has metrics but render wants no HPA (it finished), and once per generation of a
// PyTorchJob edited since it was created, whose metrics (or elasticPolicy) may have been removed:
// the HPA they made would otherwise go on scaling the job. A job never edited and without
// metrics never had an HPA, so it costs no request.
func (r *jobReconciler) applyAutoscaler(ctx context.Context, job client.Object, model *render.Job, out *render.Output) error {
	uid := job.GetUID()
	if out.Autoscaler != nil {
		r.mu.Lock()
		r.memory(uid).autoscalerGone = 0
		r.mu.Unlock()
		_, err := r.applier.ApplyUncached(ctx, out.Autoscaler)
		return err
	}
	generation := max(job.GetGeneration(), 1)
	r.mu.Lock()
	gone := r.memory(uid).autoscalerGone == generation
	r.mu.Unlock()
	metrics := model.Kubeflow != nil && model.Kubeflow.Elastic != nil && len(model.Kubeflow.Elastic.Metrics) > 0
	if gone || model.Kubeflow == nil || r.kind.gvk.Kind != "PyTorchJob" || !metrics && generation == 1 {
		return nil
	}
	var live autoscalingv2.HorizontalPodAutoscaler
	if err := r.deleteOwned(ctx, r.reader, job, job.GetName(), &live); err != nil {
		return err
	}
	live.SetGroupVersionKind(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	live.SetNamespace(job.GetNamespace())
	live.SetName(job.GetName())
	r.applier.Forget(&live)
	r.mu.Lock()
	r.memory(uid).autoscalerGone = generation
	r.mu.Unlock()
	return nil
}

// applyService applies the Service name (or deletes it when render wants none).
func (r *jobReconciler) applyService(ctx context.Context, job client.Object, name string, desired *corev1.Service) error {
	var live corev1.Service
	err := r.client.Get(ctx, types.NamespacedName{Namespace: job.GetNamespace(), Name: name}, &live)
	found := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	switch {
	case desired != nil && found && !ownedBy(&live, job):
		return takenError("Service", &live, job)
	case desired != nil && found:
		// Note: render's Services follow the job's spec. Once one was found as render wants it,
		// the intent (a conversion, an encoding and a hash: 5% of a 200-job burst's CPU) is
		// computed again only when the job's generation or the Service changes.
		seen := serviceSeen{generation: job.GetGeneration(), resourceVersion: live.ResourceVersion}
		r.mu.Lock()
		m := r.memory(job.GetUID())
		same := m.servicesSeen[name] == seen
		r.mu.Unlock()
		if same {
			return nil
		}
		patched, err := r.applier.Apply(ctx, desired, &live)
		if err == nil && !patched {
			r.mu.Lock()
			if m.servicesSeen == nil {
				m.servicesSeen = map[string]serviceSeen{}
			}
			m.servicesSeen[name] = seen
			r.mu.Unlock()
		}
		return err
	case desired != nil:
		// Not in the cache: a new job's, or one whose name another object holds. Apply would take
		// that one over (its selector with it), so the server is asked first.
		if _, err := r.nameHolder(ctx, job, desired, func() client.Object { return &corev1.Service{} }); err != nil {
			return err
		}
		_, err := r.applier.Apply(ctx, desired, nil)
		return err
	case found && ownedBy(&live, job):
		return r.applier.Delete(ctx, &live, live.UID, false)
	}
	return nil // none wanted, none there
}

// applyPodGroup applies render's gang objects: the PodGroup, after the Workload it is made from
// for the kube-scheduler's own gang scheduling. PodGroup kinds are CRDs that may be installed after
// the operator started, so they are not watched: gang objects that render no longer wants are
// looked up once and deleted.
func (r *jobReconciler) applyPodGroup(ctx context.Context, job client.Object, model *render.Job, out *render.Output) error {
	if out.PodGroup != nil {
		r.mu.Lock()
		r.memory(job.GetUID()).podGroupGone = false
		r.mu.Unlock()
		for _, obj := range []*unstructured.Unstructured{out.Workload, out.PodGroup} {
			if obj == nil {
				continue
			}
			if len(out.Decisions.Create) > 0 {
				// Note: gang objects are not watched, so one deleted by hand would never be made
				// again; a round that creates pods, which need it, applies it whatever was applied
				// before.
				r.applier.Forget(obj)
			}
			_, err := r.applier.ApplyUncached(ctx, obj)
			if apierrors.IsInvalid(err) && obj.GroupVersionKind().Group == render.KubernetesGangGroup {
				// Note: a scheduling.k8s.io Workload's templates and a PodGroup's policy are
				// immutable; when the gang changed (a Kubeflow job's minAvailable, say), the old
				// object goes and the next round creates the new one under the same name.
				if derr := r.deleteGangObject(ctx, job, obj.GroupVersionKind()); derr != nil {
					return derr
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	kinds := render.GangKinds(model, r.crds.installed())
	if len(kinds) == 0 || out.Decisions.Blocked != nil || r.podGroupGone(job.GetUID()) {
		return nil
	}
	for _, gvk := range slices.Backward(kinds) {
		if err := r.deleteGangObject(ctx, job, gvk); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.memory(job.GetUID()).podGroupGone = true
	r.mu.Unlock()
	return nil
}

// deleteGangObject deletes the job's gang object of kind gvk (named like the job) if the job owns it.
func (r *jobReconciler) deleteGangObject(ctx context.Context, job client.Object, gvk schema.GroupVersionKind) error {
	live, owned, err := r.liveGangObject(ctx, job, gvk)
	if err != nil {
		return err
	}
	if owned {
		if err := r.applier.Delete(ctx, live, live.GetUID(), false); err != nil {
			return err
		}
	}
	r.applier.Forget(live)
	return nil
}

// liveGangObject reads the job's gang object of kind gvk (named like the job) from the cache, and
// reports whether the job owns it (false when there is none).
func (r *jobReconciler) liveGangObject(ctx context.Context, job client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: job.GetNamespace(), Name: job.GetName()}, live); {
	case apierrors.IsNotFound(err):
		return live, false, nil
	case err != nil:
		return live, false, err
	}
	return live, ownedBy(live, job), nil
}

// createPods creates the pods render lists in Decisions.Create, in slow-start batches.
func (r *jobReconciler) createPods(ctx context.Context, job client.Object, out *render.Output) ([]string, error) {
	owner := string(job.GetUID())
	objs := make([]client.Object, len(out.Pods)) // render returns only the pods to create
	for i, p := range out.Pods {
		objs[i] = p
	}
	var mu sync.Mutex
	var created []string
	ctx, release := r.untilDeleted(ctx, job.GetUID())
	defer release()
	_, err := r.applier.CreateAll(ctx, objs, r.createParallelism, apply.CreateHooks{
		Before: func(o client.Object) { r.exp.ExpectCreation(owner, o) },
		Done: func(res apply.CreateResult) {
			r.exp.Created(owner, res)
			if res.Created {
				mu.Lock()
				created = append(created, res.Object.GetName())
				mu.Unlock()
			}
		},
		Proceed: r.jobStillHere(ctx, job),
		Exists:  r.ownObject(ctx, job, func() client.Object { return &corev1.Pod{} }),
	})
	slices.Sort(created)
	return created, err
}

// errJobGone stops a job's creations part-way: the job was deleted meanwhile.
var errJobGone = errors.New("the job was deleted while its objects were being created")

// untilDeleted is ctx, cancelled with errJobGone as soon as the job's deletion is seen
// (jobDeleted), and its release. CreateAll under it stops at once: the creations waiting behind the
// write gate or for an answer are cancelled, rather than created for the garbage collector to
// delete. (Asking the cache ten times a second from each job creating pods was 8% of the
// operator's CPU in a 200-job burst; docs/benchmarks.md, "A new job's first status counts the
// pods its round created".)
func (r *jobReconciler) untilDeleted(ctx context.Context, uid types.UID) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	key := new(byte)
	r.mu.Lock()
	m := r.memory(uid)
	if m.deleted {
		cancel(errJobGone)
	} else {
		if m.creating == nil {
			m.creating = map[*byte]context.CancelCauseFunc{}
		}
		m.creating[key] = cancel
	}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(m.creating, key)
		r.mu.Unlock()
		cancel(nil)
	}
}

// jobDeleted stops the creations of a deleted job under way (untilDeleted), and any it starts
// later: its deletion was seen (gone: the job is gone, not only marked for deletion). Once it
// returns, the CreateAll calls under them start nothing beyond the window already in flight. A job
// deleted with its dependents has them deleted at once (releaseDeleted), once.
func (r *jobReconciler) jobDeleted(job client.Object, gone bool) {
	uid := job.GetUID()
	release := r.kind.managed(job) && (gone || deletingDependents(job))
	r.mu.Lock()
	if m := r.jobs[uid]; m != nil { // nothing under way otherwise; not recorded, so that nothing outlives the job
		m.deleted = true
		r.shares.set(uid, false, 0)
		for _, cancel := range m.creating {
			cancel(errJobGone)
		}
		release = release && !m.released
		m.released = m.released || release
	}
	r.mu.Unlock()
	if gone && r.kinds != nil {
		r.kinds.wakeOthers(r.kind, client.ObjectKeyFromObject(job))
	}
	if release {
		r.releaseDeleted(job)
	}
}

// deletingDependents reports whether job is being deleted in the foreground (its dependents
// first), and not orphaning them.
func deletingDependents(job client.Object) bool {
	f := job.GetFinalizers()
	return job.GetDeletionTimestamp() != nil && slices.Contains(f, metav1.FinalizerDeleteDependents) &&
		!slices.Contains(f, metav1.FinalizerOrphanDependents)
}

// jobStillHere is CreateAll's question between windows: is the cache's copy of the job still this
// job, and not being deleted? A 1,000-pod job deleted while its pods are created then stops after
// the window in flight, should its deletion's event not have stopped it already (untilDeleted).
func (r *jobReconciler) jobStillHere(ctx context.Context, job client.Object) func() error {
	return func() error {
		cur := r.kind.newJob()
		// Read only, so the cache's own copy: asked ten times a second by each job creating pods,
		// a deep copy of a Kubeflow job (its pod templates) was 3% of a 200-job burst's CPU.
		switch err := r.client.Get(ctx, client.ObjectKeyFromObject(job), cur, client.UnsafeDisableDeepCopy); {
		case apierrors.IsNotFound(err):
			return errJobGone
		case err != nil:
			return nil // the cache cannot tell: carry on, as without the question
		case cur.GetUID() != job.GetUID() || cur.GetDeletionTimestamp() != nil:
			return errJobGone
		}
		return nil
	}
}

// liveDeployment is the cached Deployment of desired's name when the job owns it, or nil.
func (r *jobReconciler) liveDeployment(ctx context.Context, job client.Object, desired *appsv1.Deployment) *appsv1.Deployment {
	var live appsv1.Deployment
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(desired), &live); err != nil || !ownedBy(&live, job) {
		return nil
	}
	return &live
}

// currentStatus is the job's status: the cache's copy, unless the operator has written a newer one
// that the cache does not show yet. Only the operator writes the status, so the cache has caught
// up once it holds the resourceVersion of that write, or (after a later change to the job) the
// same status.
func (r *jobReconciler) currentStatus(job client.Object, cached *batch.TrainingJobStatus) batch.TrainingJobStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &r.memory(job.GetUID()).written
	if w.status == nil {
		return *cached
	}
	if job.GetResourceVersion() == w.resourceVersion || equality.Semantic.DeepEqual(w.status, cached) {
		w.status = nil // caught up: forget the copy
		return *cached
	}
	return *w.status.DeepCopy()
}

// cleanUpStatusWait is how many status intervals a finished job's status waits while its
// clean-up's pods go: the pods' departures are written once, when the last has gone, rather
// than once per interval (200 jobs of 8 pods: 800 of a burst's 1,068 status writes, each one
// a patch and a job watch event more); a clean-up that stalls is still reported at this pace.
const cleanUpStatusWait = 10

// gangStatusWait is how many status intervals a Running job's counts wait while more of its pods
// run, but not yet all. Its Running and its last pods running are written at once; with one
// interval between, a 200 x 8 burst on a slow host wrote 5.1-5.9 statuses a job instead of about 4
// (docs/benchmarks.md, "200 x 8: the extra status writes of a job's early Running").
const gangStatusWait = 3

// cleaningUp: pods of the job are being deleted, or are about to be (render's deletions).
func cleaningUp(out *render.Output, pods []*corev1.Pod) bool {
	if len(out.Decisions.Delete) > 0 {
		return true
	}
	return slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// runningPods counts the pods st says are running: a T9k status in its aggregate (its list may
// leave pods out, status.trimReplicaStatus); a Kubeflow one, read back
// (render.FromKubeflowStatus), has no aggregate and an entry per active pod.
func runningPods(st *batch.TrainingJobStatus) int32 {
	if st.Aggregate != (batch.Aggregate{}) {
		return st.Aggregate.Running
	}
	var n int32
	for _, t := range st.Tasks {
		for _, r := range t.ReplicaStatus {
			if r.Phase == corev1.PodRunning {
				n++
			}
		}
	}
	return n
}

// writeStatus writes next with server-side apply when it differs from current, and reports
// whether it did. Urgent changes (an outcome, a restart), the phase turning Running and the change
// that brings every pod running are written at once; the others at most once per statusInterval,
// counted from the job's creation or its last status write; a finished job's while its pods are
// cleaned up, once per cleanUpStatusWait intervals; a change of counts alone of a Running job once
// per countsWait (coalesceFor(statusInterval, its pods), or 20 times what its last write took),
// and at most once per gangStatusWait intervals while its gang comes up. It returns how long to
// wait otherwise.
func (r *jobReconciler) writeStatus(ctx context.Context, job client.Object, model *render.Job, current, next *batch.TrainingJobStatus, cleaning bool, now time.Time) (bool, time.Duration, error) {
	projected := r.kind.project(next, model)
	changed, urgent := status.Changed(current, &projected)
	if !changed {
		return false, 0, nil
	}
	uid := job.GetUID()
	r.mu.Lock()
	written := r.memory(uid).written
	r.mu.Unlock()
	last := written.at
	if created := job.GetCreationTimestamp().Time; created.After(last) {
		last = created
	}
	due := last.Add(r.statusInterval)
	switch {
	case cleaning && finished(current.Phase) && next.Phase == current.Phase:
		due = last.Add(cleanUpStatusWait * r.statusInterval)
	case current.Phase == "" && next.Phase == batch.JobPending && !blocked(next):
		// A new job's first status waits up to two intervals for its pods to start, so that a job
		// whose pods start promptly is written once, already Running.
		due = last.Add(2 * r.statusInterval)
	case next.Phase == batch.JobRunning && current.Phase != batch.JobRunning:
		// Its first pods run: say so at once (this write replaces the Pending one that waited).
		due = now
	case next.Phase == batch.JobRunning && current.Phase == batch.JobRunning && next.Aggregate.Running == next.DesiredReplicas && runningPods(current) < next.DesiredReplicas:
		// Its last pods run: the milestone a user (and Kueue's PodsReady) waits for is not held.
		due = now
	case next.Phase == batch.JobRunning && current.Phase == batch.JobRunning && runningPods(current) < next.Aggregate.Running && next.Aggregate.Running < next.DesiredReplicas:
		// Its gang coming up (more pods run, not yet all): up to gangStatusWait intervals, so that
		// a small job's start costs two writes, Running and all running, however its pods spread
		// over a few seconds.
		due = last.Add(max(gangStatusWait*r.statusInterval, countsWait(r.statusInterval, int(next.DesiredReplicas), written.took)))
	case next.Phase == batch.JobRunning && current.Phase == batch.JobRunning:
		// Counts alone: one interval more per further podsPerWindow pods (coalesceFor's rule), and
		// at least countsWriteSpacing times as long as the last write took. A big job's counts
		// change many times a second while its pods start, and every write costs the API server
		// a merge of the whole object (a Kubeflow job carries its pod templates; a T9k job's
		// status lists every pod: 0.7 MB at 5,000, 0.2 to 5.7 s a write) and every watcher of the
		// kind an event (issue 19; docs/benchmarks.md, "A big job's counts, spaced by what a
		// write takes").
		due = last.Add(countsWait(r.statusInterval, int(next.DesiredReplicas), written.took))
	}
	if wait := due.Sub(now); !urgent && wait > 0 {
		log.FromContext(ctx).V(2).Info("status write deferred", "wait", wait, "phase", next.Phase, "aggregate", next.Aggregate)
		return false, wait, nil
	}
	sent := r.now()
	write := r.applier.ApplyStatus
	if model.Dispatched {
		write = r.applier.ReplaceStatus // MultiKueue writes the status too, whole (render/multikueue.go)
	}
	rv, err := write(ctx, job, r.kind.apiStatus(next, model), StatusFieldManager)
	if err != nil {
		return false, 0, err
	}
	took := r.now().Sub(sent)
	r.mu.Lock()
	m := r.memory(uid)
	m.written = writtenStatus{at: now, took: took, status: projected.DeepCopy(), resourceVersion: rv}
	r.mu.Unlock()
	log.FromContext(ctx).V(1).Info("status written", "urgent", urgent, "phase", next.Phase, "from", current.Phase, "aggregate", next.Aggregate, "was", current.Aggregate)
	return true, 0, nil
}

// countsWriteSpacing is how many times as long as its last status write took a Running job's
// next write of counts alone waits, at least: such writes then take at most about a twentieth of
// the time. What a write takes is what it costs the API server, and how busy the server is: a
// 5,000-pod T9k job's status (0.7 MB) took 0.2 to 5.7 s a write while its pods started, 20 to 25
// writes a start at one window per 1,000 pods; spaced by this rule, 5 to 9, and the API server
// spent about a sixth less CPU on the start (docs/benchmarks.md, "A big job's counts, spaced by
// what a write takes"). A small job's write takes milliseconds, so the interval decides.
const countsWriteSpacing = 20

// countsWait is how long after its last status write a Running job of pods pods writes a change
// of counts alone: coalesceFor's window, or countsWriteSpacing times what the last write took
// (took), whichever is longer.
func countsWait(interval time.Duration, pods int, took time.Duration) time.Duration {
	return max(coalesceFor(interval, pods), countsWriteSpacing*took)
}

// firstRoundOf reports whether this is the first reconcile of the job's generation (render's
// warnings are recorded once per generation, not on every reconcile).
func (r *jobReconciler) firstRoundOf(uid types.UID, generation int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.memory(uid)
	if m.warnedGeneration == generation {
		return false
	}
	m.warnedGeneration = generation
	return true
}

// record updates the metrics after a round.
func (r *jobReconciler) record(job client.Object, model *render.Job, out *render.Output, next *batch.TrainingJobStatus, act actions, now time.Time) {
	kind := r.kind.gvk.Kind
	r.metrics.setPhase(job.GetUID(), kind, next.Phase)
	if n := len(act.created); n > 0 {
		reason := createdReplace
		switch {
		case model.Status.StartTime == nil:
			reason = createdStart
		case model.Status.Phase == batch.JobPaused || model.Status.Phase == batch.JobResuming:
			reason = createdResume
		}
		r.metrics.podsCreated.WithLabelValues(kind, reason).Add(float64(n))
	}
	for reason, n := range act.deleted {
		r.metrics.podsDeleted.WithLabelValues(kind, reason).Add(float64(n))
	}
	if out != nil && len(out.Decisions.Restarts) > 0 {
		r.metrics.restarts.WithLabelValues(kind).Add(float64(len(out.Decisions.Restarts)))
	}
	// The first round that sees every pod created, after one that did not, times the creation.
	if out != nil && next.StartTime != nil && next.Aggregate.Creating == 0 &&
		(model.Status.StartTime == nil || model.Status.Aggregate.Creating > 0) {
		r.mu.Lock()
		m := r.memory(job.GetUID())
		first := !m.allCreated
		m.allCreated = true
		r.mu.Unlock()
		if first {
			r.metrics.podsCreatedSeconds.WithLabelValues(kind).Observe(now.Sub(job.GetCreationTimestamp().Time).Seconds())
		}
	}
}

// forget drops what the reconciler remembers of a job that is gone.
func (r *jobReconciler) forget(name types.NamespacedName) {
	r.mu.Lock()
	uid, ok := r.names[name]
	delete(r.names, name)
	delete(r.jobs, uid)
	r.mu.Unlock()
	if ok {
		r.shares.set(uid, false, 0)
		r.exp.Forget(string(uid))
		r.metrics.forget(uid)
		r.kueue.forget(uid)
		r.deletions.forget(uid)
	}
}

func (r *jobReconciler) podGroupGone(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.memory(uid).podGroupGone
}

// blocked reports whether the status says the job cannot start (a missing PodGroup CRD, a spec
// only render refuses): that is written without waiting.
func blocked(s *batch.TrainingJobStatus) bool {
	c := meta.FindStatusCondition(s.Conditions, batch.ConditionInitialized)
	return c != nil && c.Status == metav1.ConditionFalse
}

// namespaceTerminating reports whether err says the namespace is being deleted.
func namespaceTerminating(err error) bool {
	var status *apierrors.StatusError
	return errors.As(err, &status) && apierrors.HasStatusCause(status, corev1.NamespaceTerminatingCause)
}

func finished(p batch.JobPhase) bool { return p == batch.JobSucceeded || p == batch.JobFailed }

func ownedBy(obj metav1.Object, job client.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == job.GetUID()
}

// recordEvents records a round's events on the job; a Restarting event names the restarted pod as
// its related object, a PodsCreated event the first pod created, so that the events API does not
// fold it into an earlier round's event of the same reason (status.RestartedPod).
func recordEvents(rec events.EventRecorder, job client.Object, out *render.Output, created []string, evs []status.Event) {
	for _, e := range evs {
		var related runtime.Object
		switch {
		case e.Reason == status.EventRestarting:
			if ref := status.RestartedPod(job.GetNamespace(), out); ref != nil {
				related = ref
			}
		case e.Reason == status.EventPodsCreated && len(created) > 0:
			related = &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: job.GetNamespace(), Name: created[0]}
		}
		rec.Eventf(job, related, e.Type, e.Reason, "Reconcile", "%s", e.Message)
	}
}
