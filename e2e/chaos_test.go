//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
)

// Faults under load: the operator killed again and again, two replicas electing a leader, a job
// deleted under its own creation. Each runs alone (it owns the operator under operatorMu). The
// API server outage is in outage_test.go, the lost node in faults_test.go.

// faultFeature is a feature that runs alone: it holds the operator (operatorMu), which it may
// kill or replace, in a namespace of its own.
func faultFeature(t *testing.T, name, assessment, prefix string, fn func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string)) {
	f := features.New(name).
		WithLabel("area", "faults").
		Assess(assessment, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, ns := namespaced(ctx, t, cfg, prefix)
			operatorMu.Lock()
			defer operatorMu.Unlock()
			fn(ctx, t, cfg, c, ns)
			return ctx
		}).
		Feature()
	testenv.Test(t, f)
}

// podHistory records, from a watch started before anything is created, every UID each pod name
// has had, and each pod's creation time (the API server's clock, in whole seconds). A name with
// two UIDs is a pod created twice.
type podHistory struct {
	mu      sync.Mutex
	uids    map[string]map[types.UID]bool
	created map[types.UID]time.Time
	events  int
	resumed int    // times the watch was resumed after the API server closed it
	ended   string // why the watch ended early: its record is then incomplete
}

func watchPodHistory(ctx context.Context, t *testing.T, ns string) *podHistory {
	t.Helper()
	wc := watchClient(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	watchFrom := func(rv string) (watch.Interface, error) {
		return wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
	}
	w, err := watchFrom("")
	if err != nil {
		t.Fatal(err)
	}
	h := &podHistory{uids: map[string]map[types.UID]bool{}, created: map[types.UID]time.Time{}}
	// The API server closes a watch that falls behind a burst (a thousand pods on two busy
	// cores); it is resumed from the last resourceVersion seen, so no event is missed. Only a
	// resourceVersion too old to resume from leaves the history incomplete.
	go func() {
		rv := ""
		for {
			for ev := range w.ResultChan() {
				switch p := ev.Object.(type) {
				case *corev1.Pod:
					rv = p.ResourceVersion
					if ev.Type == watch.Bookmark {
						continue
					}
					h.mu.Lock()
					h.events++
					if h.uids[p.Name] == nil {
						h.uids[p.Name] = map[types.UID]bool{}
					}
					h.uids[p.Name][p.UID] = true
					h.created[p.UID] = p.CreationTimestamp.Time
					h.mu.Unlock()
				default:
					h.mu.Lock()
					h.ended = fmt.Sprintf("a %s event: %v", ev.Type, ev.Object)
					h.mu.Unlock()
					w.Stop()
					return
				}
			}
			if ctx.Err() != nil {
				return
			}
			var err error
			if w, err = watchFrom(rv); err != nil {
				h.mu.Lock()
				h.ended = fmt.Sprintf("resuming the watch at resourceVersion %s: %v", rv, err)
				h.mu.Unlock()
				return
			}
			h.mu.Lock()
			h.resumed++
			h.mu.Unlock()
		}
	}()
	return h
}

// intact fails the test when the watch ended early: what it recorded proves nothing then.
func (h *podHistory) intact(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended != "" {
		t.Errorf("the pod watch ended early (%s) after %d events: the pod history is incomplete", h.ended, h.events)
	}
	if h.resumed > 0 {
		t.Logf("the pod watch was closed by the API server and resumed %d times (%d events)", h.resumed, h.events)
	}
}

// createdTwice lists the names that had more than one pod, with how many.
func (h *podHistory) createdTwice(t *testing.T) []string {
	h.intact(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for name, uids := range h.uids {
		if len(uids) > 1 {
			out = append(out, fmt.Sprintf("%s×%d", name, len(uids)))
		}
	}
	sort.Strings(out)
	return out
}

// createdFrom counts the pods created at or after from.
func (h *podHistory) createdFrom(t *testing.T, from time.Time) int {
	h.intact(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, at := range h.created {
		if !at.Before(from) {
			n++
		}
	}
	return n
}

// podNames are the names the SPEC gives the pods of job j's replica type typ: j-typ-0 ... j-typ-(n-1).
func podNames(into map[string]bool, job, typ string, n int) {
	for i := range n {
		into[fmt.Sprintf("%s-%s-%d", job, typ, i)] = true
	}
}

// diffNames says which wanted names are missing and which present ones are not wanted.
func diffNames(want, got map[string]bool) (missing, extra []string) {
	for n := range want {
		if !got[n] {
			missing = append(missing, n)
		}
	}
	for n := range got {
		if !want[n] {
			extra = append(extra, n)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

// firstFew shortens a long list for a message.
func firstFew(s []string) string {
	if len(s) > 10 {
		return fmt.Sprintf("%s ... (%d in all)", strings.Join(s[:10], ", "), len(s))
	}
	return strings.Join(s, ", ")
}

// truthfulStatus compares a job's status aggregate with its pods as they are.
func truthfulStatus(ctx context.Context, t *testing.T, c client.Client, ns, job string) (bool, string) {
	st, err := jobStatus(ctx, c, ns, job)
	if err != nil {
		return false, err.Error()
	}
	var seen batch.Aggregate
	for _, p := range jobPods(ctx, t, c, ns, job) {
		switch {
		case p.DeletionTimestamp != nil:
			seen.Deleted++
		case p.Status.Phase == corev1.PodRunning:
			seen.Running++
		case p.Status.Phase == corev1.PodSucceeded:
			seen.Succeeded++
		case p.Status.Phase == corev1.PodFailed:
			seen.Failed++
		default:
			seen.Pending++
		}
	}
	// The status counts every wanted replica once: those without a pod as creating, or, once
	// the job has stopped or let them go, as deleted; a pod list cannot show either.
	got := st.Aggregate
	ok := got.Running == seen.Running && got.Succeeded == seen.Succeeded && got.Failed == seen.Failed &&
		got.Pending == seen.Pending && got.Deleted >= seen.Deleted && got.Unknown == 0
	if st.Phase == batch.JobSucceeded || st.Phase == batch.JobFailed {
		ok = ok && got.Creating == 0
	}
	return ok, fmt.Sprintf("phase %s, status %+v, pods %+v", st.Phase, st.Aggregate, seen)
}

// TestOperatorKilledFiveTimes: SIGKILL at five random moments while a 1,000-pod job and 20 small
// jobs are created; once the sixth operator has settled, the pods are exactly the wanted ones,
// none was ever created twice, no Service is left over, and every status says what its pods say.
func TestOperatorKilledFiveTimes(t *testing.T) {
	faultFeature(t, "the operator SIGKILLed at five random moments while a 1,000-pod job and 20 small jobs are created: exactly the wanted pods, none twice, no orphan, every status true",
		"kill, restart, five times; then count", "kill5",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
			seed := time.Now().UnixNano()
			rng := rand.New(rand.NewPCG(uint64(seed), 0))
			t.Logf("seed %d (the kill moments)", seed)
			history := watchPodHistory(ctx, t, ns)

			want := map[string]bool{}
			jobs := map[string]batch.JobPhase{"big": batch.JobRunning}
			create(ctx, t, c, ns, pyTorchJob("big").Workers(999, sim("", "")).Obj())
			podNames(want, "big", "master", 1)
			podNames(want, "big", "worker", 999)
			for i := range 10 {
				// Finish while the operator is being killed: their outcome must be recorded.
				name := fmt.Sprintf("small-pt-%d", i)
				create(ctx, t, c, ns, pyTorchJob(name).Master(sim("2s", "0")).Workers(2, sim("2s", "0")).CleanUp(batch.CleanUpPolicyNone).Obj())
				podNames(want, name, "master", 1)
				podNames(want, name, "worker", 2)
				jobs[name] = batch.JobSucceeded
				name = fmt.Sprintf("small-tf-%d", i)
				create(ctx, t, c, ns, tensorFlowJob(name).Replica(batch.TensorFlowReplicaChief, 1, sim("", "")).Replica(batch.TensorFlowReplicaWorker, 2, sim("", "")).Obj())
				podNames(want, name, "chief", 1)
				podNames(want, name, "worker", 2)
				jobs[name] = batch.JobRunning
			}
			created := time.Now()

			for kill := 1; kill <= 5; kill++ {
				wait := time.Duration(50+rng.IntN(1500)) * time.Millisecond
				time.Sleep(wait)
				if err := sharedOperator.kill(); err != nil {
					t.Fatal(err)
				}
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				t.Logf("kill %d: %s after the operator was ready, %.1f s after the jobs were created; %d pods existed", kill, wait, time.Since(created).Seconds(), len(pods.Items))
				p, err := startOperator(cfg, "operator.log")
				if err != nil {
					t.Fatal(err)
				}
				sharedOperator = p
			}
			lastStart := time.Now()
			// Where the time goes: the pods' creation, the fake kubelet running them, the statuses.
			var allExisted time.Duration
			eventually(t, 3*time.Minute, "every wanted pod exists and runs or has run", func() (bool, string) {
				var pods corev1.PodList
				if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
					return false, err.Error()
				}
				if len(pods.Items) == len(want) && allExisted == 0 {
					allExisted = time.Since(lastStart)
				}
				started := 0
				for _, p := range pods.Items {
					if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
						started++
					}
				}
				return len(pods.Items) == len(want) && started == len(want), fmt.Sprintf("%d pods, %d started", len(pods.Items), started)
			})
			t.Logf("every pod existed %.1f s and had started %.1f s after the last restart", allExisted.Seconds(), time.Since(lastStart).Seconds())

			eventually(t, 3*time.Minute, "every job has its phase and a status that matches its pods", func() (bool, string) {
				for _, j := range slices.Sorted(maps.Keys(jobs)) {
					st, err := jobStatus(ctx, c, ns, j)
					if err != nil {
						return false, err.Error()
					}
					if st.Phase != jobs[j] {
						return false, fmt.Sprintf("%s is %q, want %s (%+v)", j, st.Phase, jobs[j], st.Aggregate)
					}
					if ok, why := truthfulStatus(ctx, t, c, ns, j); !ok {
						return false, j + ": " + why
					}
				}
				return true, ""
			})
			t.Logf("all 21 jobs' statuses settled %.1f s after the last restart (%.1f s after the jobs were created)", time.Since(lastStart).Seconds(), time.Since(created).Seconds())
			time.Sleep(2 * time.Second) // a late write would show now

			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, p := range pods.Items {
				got[p.Name] = true
			}
			missing, extra := diffNames(want, got)
			twice := history.createdTwice(t)
			t.Logf("%d pods (want %d): %d missing, %d not wanted, %d names created twice", len(pods.Items), len(want), len(missing), len(extra), len(twice))
			if len(missing) > 0 || len(extra) > 0 || len(pods.Items) != len(want) {
				t.Errorf("pods: missing %s; not wanted %s", firstFew(missing), firstFew(extra))
			}
			if len(twice) > 0 {
				t.Errorf("pods created twice: %s", firstFew(twice))
			}
			// One Service per job (SPEC section 2), and no other.
			var svcs corev1.ServiceList
			if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			gotSvc := map[string]bool{}
			for _, s := range svcs.Items {
				gotSvc[s.Name] = true
			}
			wantSvc := map[string]bool{}
			for j := range jobs {
				wantSvc[j] = true
			}
			if missing, extra := diffNames(wantSvc, gotSvc); len(missing) > 0 || len(extra) > 0 {
				t.Errorf("Services: missing %s; not wanted %s", firstFew(missing), firstFew(extra))
			}
			for j := range jobs {
				if ok, why := truthfulStatus(ctx, t, c, ns, j); !ok {
					t.Errorf("%s: the status does not match the pods: %s", j, why)
				}
			}
			// Free the cluster for the features after this one.
			if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "big")}); err != nil {
				t.Error(err)
			}
		})
}

// leaseName and leaseNamespace are where the e2e operators elect their leader (controller/manager.go
// names the lease; the install's Role lets the ServiceAccount use leases there).
const (
	leaseName      = "trainyard.batch.tensorstack.dev"
	leaseNamespace = "trainyard-system"
	// client-go's leader election: a candidate retries every RetryPeriod (controller-runtime's
	// default 2 s) stretched by up to 1.2 times as much jitter, at most 4.4 s. It judges expiry
	// from its own clock: a lease expires LeaseDuration after the candidate last saw it change
	// (observedTime in client-go's tools/leaderelection), which is up to one retry after the
	// leader's last renewal; the retry that finds it expired comes up to one retry later still.
	leaseRetryMax = 4400 * time.Millisecond
)

// TestLeaderElection: two replicas elect one leader; the leader SIGKILLed part-way through a
// 300-pod job, the other takes over once the lease lapses and finishes the job, no pod twice.
func TestLeaderElection(t *testing.T) {
	faultFeature(t, "two replicas with leader election: the leader SIGKILLed, the other takes over within the lease duration and no pod is created twice",
		"kill the leader part-way through a job", "leader",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
			startAgain := standAsideSharedOperator(t, cfg)
			replicas := map[string]*operatorProcess{}
			defer func() {
				for _, p := range replicas {
					if p.alive() {
						_ = p.stop()
					}
				}
				startAgain()
			}()
			elect := []string{"--leader-elect", "--leader-election-namespace=" + leaseNamespace}
			for _, r := range []string{"a", "b"} {
				p, err := startOperator(cfg, "operator-"+r+".log", elect...)
				if err != nil {
					t.Fatal(err)
				}
				replicas[r] = p
			}
			var leader, standby string
			eventually(t, 60*time.Second, "one replica leads", func() (bool, string) {
				var leading []string
				for r, p := range replicas {
					if v, err := metricValue(p.Metrics, "leader_election_master_status"); err == nil && v == 1 {
						leading = append(leading, r)
					}
				}
				if len(leading) != 1 {
					return false, fmt.Sprintf("leading: %v", leading)
				}
				leader = leading[0]
				standby = map[string]string{"a": "b", "b": "a"}[leader]
				return true, ""
			})
			lease := getLease(ctx, t, c)
			t.Logf("replica %s leads (lease holder %s, duration %d s)", leader, deref(lease.Spec.HolderIdentity), deref(lease.Spec.LeaseDurationSeconds))

			history := watchPodHistory(ctx, t, ns)
			create(ctx, t, c, ns, pyTorchJob("le").Workers(299, sim("", "")).Obj())
			eventually(t, 60*time.Second, "the leader creates pods", func() (bool, string) {
				n := len(jobPods(ctx, t, c, ns, "le"))
				return n > 0, fmt.Sprint(n)
			})
			if err := replicas[leader].kill(); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			// Read after the SIGKILL: the dead leader renews no more, so this is its last renewal.
			lastRenew := getLease(ctx, t, c).Spec.RenewTime.Time
			delete(replicas, leader)
			t.Logf("killed the leader when %d pods existed", len(jobPods(ctx, t, c, ns, "le")))

			var taken coordinationv1.Lease
			eventually(t, 60*time.Second, "the standby holds the lease", func() (bool, string) {
				taken = getLease(ctx, t, c)
				return deref(taken.Spec.HolderIdentity) != deref(lease.Spec.HolderIdentity), deref(taken.Spec.HolderIdentity)
			})
			took := time.Since(killed)
			// The lease's own times: the lapse from the dead leader's last renewal to the
			// standby's acquisition.
			lapse := taken.Spec.AcquireTime.Sub(lastRenew)
			duration := time.Duration(deref(lease.Spec.LeaseDurationSeconds)) * time.Second
			t.Logf("replica %s took over %.1f s after the kill, %.1f s after the last renewal (lease duration %s)", standby, took.Seconds(), lapse.Seconds(), duration)
			if lapse > duration+2*leaseRetryMax {
				t.Errorf("the standby acquired the lease %s after the last renewal; want at most the lease duration %s plus two retries of at most %s (one to see the last renewal, one to find it expired)", lapse, duration, leaseRetryMax)
			}
			// client-go sets the metric after its lease update has returned (and the event is
			// recorded), so the holder can be seen in the API a moment before the metric says so.
			eventually(t, 5*time.Second, "replica "+standby+"'s leader_election_master_status is 1", func() (bool, string) {
				v, err := metricValue(replicas[standby].Metrics, "leader_election_master_status")
				return err == nil && v == 1, fmt.Sprintf("%v (%v)", v, err)
			})

			waitPhase(ctx, t, c, ns, "le", batch.JobRunning)
			eventually(t, 60*time.Second, "300 pods, all running", func() (bool, string) {
				st, _ := jobStatus(ctx, c, ns, "le")
				return st.Aggregate.Running == 300, fmt.Sprintf("%+v", st.Aggregate)
			})
			want := map[string]bool{}
			podNames(want, "le", "master", 1)
			podNames(want, "le", "worker", 299)
			got := map[string]bool{}
			for _, p := range jobPods(ctx, t, c, ns, "le") {
				got[p.Name] = true
			}
			if missing, extra := diffNames(want, got); len(missing) > 0 || len(extra) > 0 {
				t.Errorf("pods: missing %s; not wanted %s", firstFew(missing), firstFew(extra))
			}
			if twice := history.createdTwice(t); len(twice) > 0 {
				t.Errorf("pods created twice: %s", firstFew(twice))
			}
			if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "le")}); err != nil {
				t.Error(err)
			}
		})
}

func getLease(ctx context.Context, t *testing.T, c client.Client) coordinationv1.Lease {
	t.Helper()
	var l coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: leaseNamespace, Name: leaseName}, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestJobDeletedWhileCreating: a 500-pod job deleted while its pods are being created leaves no
// pod, Service or PodGroup behind, and a job beside it keeps its pods.
func TestJobDeletedWhileCreating(t *testing.T) {
	faultFeature(t, "a job deleted while its pods are being created leaves nothing behind, and its neighbour is untouched",
		"delete part-way", "doomed",
		func(ctx context.Context, t *testing.T, cfg *envconf.Config, c client.Client, ns string) {
			create(ctx, t, c, ns, pyTorchJob("neighbour").Workers(2, sim("", "")).Obj())
			waitPhase(ctx, t, c, ns, "neighbour", batch.JobRunning)
			before := jobPods(ctx, t, c, ns, "neighbour")
			history := watchPodHistory(ctx, t, ns)

			create(ctx, t, c, ns, pyTorchJob("doomed").Workers(499, sim("", "")).Obj())
			eventually(t, 60*time.Second, "the operator creates some pods", func() (bool, string) {
				n := len(jobPods(ctx, t, c, ns, "doomed"))
				return n >= 10, fmt.Sprint(n)
			})
			if err := c.Delete(ctx, &batch.PyTorchTrainingJob{ObjectMeta: objectMeta(ns, "doomed")}); err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			atDelete := len(jobPods(ctx, t, c, ns, "doomed"))
			eventually(t, 2*time.Minute, "no pod or Service of the deleted job", func() (bool, string) {
				pods := len(jobPods(ctx, t, c, ns, "doomed"))
				var svcs corev1.ServiceList
				if err := c.List(ctx, &svcs, client.InNamespace(ns), client.MatchingLabels{batch.LabelOwnerName: "doomed"}); err != nil {
					return false, err.Error()
				}
				return pods == 0 && len(svcs.Items) == 0, fmt.Sprintf("%d pods, %d Services", pods, len(svcs.Items))
			})
			gone := time.Since(deleted)
			time.Sleep(3 * time.Second) // nothing may come back
			// Creation times have whole seconds: a pod of the batch in flight at the deletion
			// may show the next second; none may show the one after.
			second := deleted.Truncate(time.Second)
			late, tooLate := history.createdFrom(t, second.Add(time.Second)), history.createdFrom(t, second.Add(2*time.Second))
			t.Logf("deleted the job when %d of its 500 pods existed; %d pods were seen in all (the neighbour's 3 among them if they changed), %d of them in the second after the deletion's; every pod and Service was gone %.1f s after the deletion", atDelete, history.createdFrom(t, time.Time{}), late, gone.Seconds())
			if n := len(jobPods(ctx, t, c, ns, "doomed")); n != 0 {
				t.Errorf("%d pods of the deleted job came back", n)
			}
			if tooLate > 0 {
				t.Errorf("%d pods were created two or more seconds after the job was deleted; the operator should stop after the batch in flight", tooLate)
			}
			now := jobPods(ctx, t, c, ns, "neighbour")
			if !sameUIDs(before, now) {
				t.Errorf("the neighbour's pods changed: %v -> %v", uidsOf(before), uidsOf(now))
			}
			st := waitPhase(ctx, t, c, ns, "neighbour", batch.JobRunning)
			if st.Aggregate.Running != 3 {
				t.Errorf("neighbour: %+v; want 3 running", st.Aggregate)
			}
		})
}

func uidsOf(pods []corev1.Pod) map[string]types.UID {
	m := map[string]types.UID{}
	for _, p := range pods {
		m[p.Name] = p.UID
	}
	return m
}

func sameUIDs(a, b []corev1.Pod) bool { return maps.Equal(uidsOf(a), uidsOf(b)) }
