// Package cli is the trainyard command line beside the operator: `render` (what a job would
// create, without a cluster), and `get`, `describe`, `logs`, `pause` and `resume` for the jobs of
// all four kinds on a cluster. The same binary named kubectl-trainyard on PATH is the kubectl
// plugin `kubectl trainyard`.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/controller"
	"github.com/trainyard/trainyard/render"
)

// Verbs are the commands Run knows.
var Verbs = []string{"render", "get", "describe", "logs", "pause", "resume"}

// Usage is the command line's help.
const Usage = `usage:
  trainyard [operator flags]                    run the operator (trainyard -help for its flags)
  trainyard render -f job.yaml [--observed objects.yaml ...] [--now RFC3339] [-n NS]
                 [--cluster-domain D] [--node-lost-after D]   what a job would create, no cluster
  trainyard get [-A] [-n NS] [--wide] [-w]      jobs of all four kinds in one table; -w: then each change
  trainyard describe [KIND/]JOB [-n NS]         a job at a glance: replicas, restarts, conditions, events
  trainyard logs [KIND/]JOB [-f] [--replica-type T] [--index I] [--tail N] [--previous]
                                                every rank's training container, lines prefixed
  trainyard pause [KIND/]JOB [--wait] [--timeout D]   delete the job's pods and keep the job
  trainyard resume [KIND/]JOB [--wait] [--timeout D]  bring them back; --wait: until it runs again
Cluster flags as kubectl's: --kubeconfig, --context, -n/--namespace (render takes -n only). As a
kubectl plugin (the binary named kubectl-trainyard on PATH): kubectl trainyard get.`

// leadingFlags are kubectl's global flags, which kubectl users also write before the verb
// (kubectl -n team get pods), each with the value it takes.
var leadingFlags = []string{"kubeconfig", "context", "namespace", "n"}

// SplitVerb finds the verb in args that start with it or with kubectl's global flags before it
// (trainyard --kubeconfig k -n team get), and returns it with the rest of args, those flags first.
// ok is false when args name no verb there: they are the operator's.
func SplitVerb(args []string) (verb string, rest []string, ok bool) {
	i := verbIndex(args)
	if i < 0 || i >= len(args) || !slices.Contains(Verbs, args[i]) {
		return "", nil, false
	}
	return args[i], append(slices.Clone(args[:i]), args[i+1:]...), true
}

// verbIndex is where the verb stands in args, after kubectl's global flags and their values
// (len(args) when nothing follows them), or -1 when another flag comes first.
func verbIndex(args []string) int {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		name, _, withValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !slices.Contains(leadingFlags, name) {
			return -1
		}
		i++
		if !withValue {
			i++ // the flag's value
		}
	}
	return min(i, len(args))
}

// PluginUsage is `kubectl trainyard ARGS` when ARGS name no verb (SplitVerb's ok is false): the
// plugin never runs the operator, so it prints the usage when asked for help (no arguments,
// help, -h, --help) and otherwise fails, naming what it could not read as a command.
func PluginUsage(args []string, stderr io.Writer) error {
	if len(args) == 0 || slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		fmt.Fprintln(stderr, Usage)
		return nil
	}
	what := fmt.Sprintf("unknown command %q", args[0])
	switch i := verbIndex(args); {
	case i < 0:
		what = fmt.Sprintf("unknown flag %q before the command", args[0])
	case i == len(args):
		what = "no command after the flags"
	default:
		what = fmt.Sprintf("unknown command %q", args[i])
	}
	return fmt.Errorf("%s: the commands are %s (kubectl trainyard help)", what, strings.Join(Verbs, ", "))
}

// Run runs verb with args, writing to stdout and stderr.
func Run(verb string, args []string, stdout, stderr io.Writer) error {
	switch verb {
	case "render":
		return runRender(args, stdout, stderr)
	case "get":
		return runGet(args, stdout, stderr)
	case "describe":
		return runDescribe(args, stdout, stderr)
	case "logs":
		return runLogs(args, stdout, stderr)
	case "pause":
		return runPause(true, args, stdout, stderr)
	case "resume":
		return runPause(false, args, stdout, stderr)
	}
	return fmt.Errorf("unknown command %q\n%s", verb, Usage)
}

// clusterFlags are kubectl's flags for reaching a cluster.
type clusterFlags struct {
	kubeconfig, context, namespace string
	allNamespaces                  bool
}

func (c *clusterFlags) bind(fs *flag.FlagSet, all bool) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&c.context, "context", "", "the kubeconfig context to use")
	fs.StringVar(&c.namespace, "namespace", "", "the namespace (default: the context's)")
	fs.StringVar(&c.namespace, "n", "", "shorthand for --namespace")
	if all {
		fs.BoolVar(&c.allNamespaces, "all-namespaces", false, "list the jobs of every namespace")
		fs.BoolVar(&c.allNamespaces, "A", false, "shorthand for --all-namespaces")
	}
}

// session is a connection to the cluster the flags name.
type session struct {
	client    client.WithWatch
	clientset kubernetes.Interface
	namespace string
	// context is the kubeconfig context in use (for the hints that differ on the local cluster).
	context string
	// openLog opens a pod's log; nil: the clientset's (a test's stand-in otherwise).
	openLog func(ctx context.Context, p *corev1.Pod, opts *corev1.PodLogOptions) (io.ReadCloser, error)
}

func (c *clusterFlags) connect() (*session, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.kubeconfig != "" {
		rules.ExplicitPath = c.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errors.New("no cluster to talk to: no kubeconfig found (set --kubeconfig or $KUBECONFIG, or write ~/.kube/config)")
	}
	if err != nil {
		return nil, err
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, err
	}
	if c.namespace != "" {
		ns = c.namespace
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "trainyard-cli"
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	context := c.context
	if raw, err := cc.RawConfig(); err == nil && context == "" {
		context = raw.CurrentContext
	}
	return &session{client: cl, clientset: cs, namespace: ns, context: context}, nil
}

// parse parses args with positional arguments allowed before, between and after the flags, as
// kubectl does; it returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseFlags is fs.Parse, but a wrong flag is the one line of the error returned, naming -h,
// rather than the flag package's line followed by every flag on fs's output; -h prints them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(out)
		fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		return err
	case err != nil:
		return fmt.Errorf("%s: %w (%s -h lists its flags)", strings.TrimPrefix(fs.Name(), "trainyard "), err, fs.Name())
	}
	return nil
}

// kindInfo is one of the four kinds as the CLI lists and reads them.
type kindInfo struct {
	kind    string
	group   string
	aliases []string
	newList func() client.ObjectList
	newJob  func() client.Object
	items   func(client.ObjectList) []client.Object
	model   func(client.Object) render.Job
}

var kinds = []kindInfo{
	{kind: "PyTorchTrainingJob", group: batch.GroupVersion.Group, aliases: []string{"ptj", "pytorchtrainingjob", "pytorchtrainingjobs"},
		newList: func() client.ObjectList { return &batch.PyTorchTrainingJobList{} },
		newJob:  func() client.Object { return &batch.PyTorchTrainingJob{} },
		items: func(l client.ObjectList) []client.Object {
			return objects(l.(*batch.PyTorchTrainingJobList).Items)
		},
		model: func(o client.Object) render.Job { return render.FromPyTorchTrainingJob(o.(*batch.PyTorchTrainingJob)) }},
	{kind: "TensorFlowTrainingJob", group: batch.GroupVersion.Group, aliases: []string{"tfj", "tensorflowtrainingjob", "tensorflowtrainingjobs"},
		newList: func() client.ObjectList { return &batch.TensorFlowTrainingJobList{} },
		newJob:  func() client.Object { return &batch.TensorFlowTrainingJob{} },
		items: func(l client.ObjectList) []client.Object {
			return objects(l.(*batch.TensorFlowTrainingJobList).Items)
		},
		model: func(o client.Object) render.Job {
			return render.FromTensorFlowTrainingJob(o.(*batch.TensorFlowTrainingJob))
		}},
	{kind: "PyTorchJob", group: kubeflowv1.GroupVersion.Group, aliases: []string{"pytorchjob", "pytorchjobs"},
		newList: func() client.ObjectList { return &kubeflowv1.PyTorchJobList{} },
		newJob:  func() client.Object { return &kubeflowv1.PyTorchJob{} },
		items: func(l client.ObjectList) []client.Object {
			return objects(l.(*kubeflowv1.PyTorchJobList).Items)
		},
		model: func(o client.Object) render.Job { return render.FromPyTorchJob(o.(*kubeflowv1.PyTorchJob)) }},
	{kind: "TFJob", group: kubeflowv1.GroupVersion.Group, aliases: []string{"tfjob", "tfjobs"},
		newList: func() client.ObjectList { return &kubeflowv1.TFJobList{} },
		newJob:  func() client.Object { return &kubeflowv1.TFJob{} },
		items: func(l client.ObjectList) []client.Object {
			return objects(l.(*kubeflowv1.TFJobList).Items)
		},
		model: func(o client.Object) render.Job { return render.FromTFJob(o.(*kubeflowv1.TFJob)) }},
}

// objects takes the address of each item of a list.
func objects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// named: want (lower case) names the kind: its kind, an alias, or kubectl's resource.group
// (pytorchtrainingjobs.batch.tensorstack.dev).
func (k *kindInfo) named(want string) bool {
	if strings.EqualFold(want, k.kind) || contains(k.aliases, want) {
		return true
	}
	resource, group, ok := strings.Cut(want, ".")
	return ok && contains(k.aliases, resource) && group == strings.ToLower(k.group)
}

// job is one job as the CLI shows it.
type job struct {
	info  *kindInfo
	obj   client.Object
	model render.Job
	// livePods, when set, is how many of the job's pods run now, counted from the pods: a
	// finished kubeflow.org job's status keeps the counts it finished with (frozenRunning).
	livePods *int32
}

// findJob reads the job named by ref ([KIND/]NAME): the one kind named, else every kind, and
// refuses a name that two kinds share.
func (s *session) findJob(ctx context.Context, ref string) (*job, error) {
	name, want := ref, ""
	if k, n, ok := strings.Cut(ref, "/"); ok {
		want, name = strings.ToLower(k), n
	}
	var found []*job
	var named *kindInfo  // the kind ref names, if it names one
	var missing []string // the kinds whose CRD the cluster has not
	for i := range kinds {
		k := &kinds[i]
		if want != "" && !k.named(want) {
			continue
		}
		named = k
		obj := k.newJob()
		err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, obj)
		switch {
		case err == nil:
			found = append(found, &job{info: k, obj: obj, model: k.model(obj)})
		case meta.IsNoMatchError(err):
			missing = append(missing, k.kind)
		case isNotFound(err):
		default:
			return nil, err
		}
	}
	switch {
	case len(found) == 0 && want != "" && named == nil:
		var all []string
		for _, k := range kinds {
			all = append(all, k.aliases[0])
		}
		return nil, fmt.Errorf("%q is not a kind of training job: say %s (or no kind)", want, strings.Join(all, ", "))
	case len(found) == 0 && want != "" && contains(missing, named.kind):
		return nil, fmt.Errorf("the cluster has no %s: its CRD %s.%s is not installed%s", named.kind, named.aliases[len(named.aliases)-1], named.group, installHint(named, s.context))
	case len(found) == 0 && want != "":
		return nil, fmt.Errorf("no %s %q in namespace %s", named.kind, name, s.namespace)
	case len(found) == 0 && len(missing) > 0:
		return nil, fmt.Errorf("no training job %q in namespace %s (the cluster has no %s: not installed)", ref, s.namespace, strings.Join(missing, ", "))
	case len(found) == 0:
		return nil, fmt.Errorf("no training job %q in namespace %s", ref, s.namespace)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	}
	var names []string
	for _, j := range found {
		names = append(names, j.info.aliases[0]+"/"+name)
	}
	return nil, fmt.Errorf("%q names jobs of several kinds: say which, e.g. %s", name, strings.Join(names, " or "))
}

// installHint says how to install a kind that is opt-in into the cluster of the kubeconfig
// context named context.
func installHint(k *kindInfo, context string) string {
	if k.group == kubeflowv1.GroupVersion.Group {
		return " (the kubeflow.org kinds are opt-in: " + controller.KubeflowInstall(context) + ")"
	}
	return ""
}

// listJobs lists the jobs of every kind installed, sorted by namespace and name, and the
// resourceVersion of each kind's list (a kind not installed has none), to watch from.
func (s *session) listJobs(ctx context.Context, all bool) ([]*job, map[string]string, error) {
	var out []*job
	versions := map[string]string{}
	for i := range kinds {
		k := &kinds[i]
		jobs, rv, err := s.listKind(ctx, k, all)
		if err != nil {
			if meta.IsNoMatchError(err) || isNotFound(err) {
				continue // the kind is not installed (the Kubeflow kinds are opt-in)
			}
			return nil, nil, err
		}
		out = append(out, jobs...)
		versions[k.kind] = rv
	}
	s.countLivePods(ctx, out, all)
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].obj.GetNamespace() != out[b].obj.GetNamespace() {
			return out[a].obj.GetNamespace() < out[b].obj.GetNamespace()
		}
		return out[a].obj.GetName() < out[b].obj.GetName()
	})
	return out, versions, nil
}

// countLivePods counts the running pods of the jobs whose status does not (frozenRunning), in one
// list of their pods. When they cannot be listed (a user who may not list pods), the status's
// count stays.
func (s *session) countLivePods(ctx context.Context, jobs []*job, all bool) {
	byKey := map[string]*job{}
	names := sets.New[string]()
	for _, j := range jobs {
		if j.frozenRunning() {
			byKey[key(j)] = j
			names.Insert(j.obj.GetName())
			j.livePods = new(int32)
		}
	}
	if len(byKey) == 0 {
		return
	}
	sel := labels.NewSelector()
	for _, r := range []struct {
		label  string
		values []string
	}{{batch.LabelOwnerKind, []string{"PyTorchJob", "TFJob"}}, {batch.LabelOwnerName, sets.List(names)}} {
		req, err := labels.NewRequirement(r.label, selection.In, r.values)
		if err != nil {
			continue // a name no label can hold: not one of a job's pods
		}
		sel = sel.Add(*req)
	}
	var pods corev1.PodList
	if err := s.client.List(ctx, &pods, append(s.scope(all), client.MatchingLabelsSelector{Selector: sel})...); err != nil {
		for _, j := range byKey {
			j.livePods = nil
		}
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		j := byKey[p.Labels[batch.LabelOwnerKind]+"/"+p.Namespace+"/"+p.Labels[batch.LabelOwnerName]]
		if j != nil && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			*j.livePods++
		}
	}
}

// countRunning sets the running pods of a job whose status does not count them (frozenRunning)
// from its pods.
func countRunning(j *job, pods []corev1.Pod) {
	if !j.frozenRunning() {
		return
	}
	n := int32(0)
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pods[i].DeletionTimestamp == nil {
			n++
		}
	}
	j.livePods = &n
}

// listKind lists the jobs of one kind, in the session's namespace or all, and the list's
// resourceVersion.
func (s *session) listKind(ctx context.Context, k *kindInfo, all bool) ([]*job, string, error) {
	list := k.newList()
	if err := s.client.List(ctx, list, s.scope(all)...); err != nil {
		return nil, "", err
	}
	var out []*job
	for _, o := range k.items(list) {
		out = append(out, &job{info: k, obj: o, model: k.model(o)})
	}
	return out, list.(metav1.ListInterface).GetResourceVersion(), nil
}

// scope is the session's namespace as list options, or none for all namespaces.
func (s *session) scope(all bool) []client.ListOption {
	if all {
		return nil
	}
	return []client.ListOption{client.InNamespace(s.namespace)}
}

// running counts the job's running pods: as its status says, or as counted from the pods when
// the status's count is not of now (frozenRunning).
func (j *job) running() int32 {
	st := &j.model.Status
	if j.livePods != nil {
		return *j.livePods
	}
	if j.model.Kubeflow == nil {
		return st.Aggregate.Running
	}
	return j.statusRunning()
}

// frozenRunning says that the job's status counts running pods as they were when it finished,
// not now: a failed kubeflow.org job keeps the replicaStatuses' active it failed with, as
// Kubeflow's operator does, though its pods are deleted (activeDeadlineSeconds, backoffLimit,
// cleanPodPolicy). Its running pods are counted from the pods instead.
func (j *job) frozenRunning() bool {
	p := j.model.Status.Phase
	return j.model.Kubeflow != nil && (p == batch.JobFailed || p == batch.JobSucceeded) && j.statusRunning() > 0
}

// statusRunning is a kubeflow.org job's running pods as its replicaStatuses count them (active).
func (j *job) statusRunning() int32 {
	st := &j.model.Status
	var n int32
	for _, t := range st.Tasks {
		for _, r := range t.ReplicaStatus {
			if r.Phase == "Running" {
				n++
			}
		}
	}
	return n
}

// desired is the number of pods the job wants now: its status's (a T9k job's status counts the
// pods Kueue admitted, which for an elastic job may be fewer than its spec asks), else its spec's.
func (j *job) desired() int32 {
	if n := j.model.Status.DesiredReplicas; n > 0 && j.model.Kubeflow == nil {
		return n
	}
	return j.model.PodCount()
}

// restarts is the job's restarts counted against its backoffLimit.
// restarts is how often the job's pods were restarted: after an exit code (backoffCount) or a
// disruption (disruptionCount).
//
// Note: backoffCount alone left a job restarted by an eviction, a preemption or a lost node at 0,
// as if nothing had happened to it; describe tells the two apart.
func (j *job) restarts() int32 { return j.model.Status.BackoffCount + j.model.Status.DisruptionCount }

// waiting is the reason and message of the job's Waiting condition, if it has one.
func (j *job) waiting() (reason, message string) {
	if c := meta.FindStatusCondition(j.model.Status.Conditions, batch.ConditionWaiting); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason, c.Message
	}
	return "", ""
}

// why is what get's REASON column says of the job: the reason it waits (its Waiting
// condition), or, for a failed job, why it failed (its Failed condition: BackoffLimitExceeded,
// DeadlineExceeded, a replica's exit ...), with the message of either.
func (j *job) why() (reason, message string) {
	if reason, message = j.waiting(); reason != "" {
		return reason, message
	}
	if j.model.Status.Phase == batch.JobFailed {
		if c := meta.FindStatusCondition(j.model.Status.Conditions, batch.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
			return c.Reason, c.Message
		}
	}
	return "", ""
}

func (j *job) phase() string {
	p := j.model.Status.Phase
	if reason, _ := j.waiting(); (reason == batch.ReasonQueued || reason == render.ReasonDeactivated) && p == batch.JobPaused {
		// A kubeflow.org job Kueue holds is suspended, which reads back as Paused; Kueue's hold
		// (its Workload inactive too) is shown as the T9k kinds show it, Pending, never as a
		// user's pause.
		p = batch.JobPending
	}
	if p != "" {
		return string(p)
	}
	return "-"
}

// age is how long ago t was, as kubectl prints it.
func age(t metav1.Time, now time.Time) string {
	d := now.Sub(t.Time)
	switch {
	case t.IsZero():
		return "<unknown>"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isNotFound(err error) bool {
	var status interface{ Status() metav1.Status }
	return errors.As(err, &status) && status.Status().Code == 404
}

// openOne parses a one-job command's arguments and reads the job; cancel ends the context the
// caller goes on with.
func openOne(fs *flag.FlagSet, cf *clusterFlags, args []string) (s *session, j *job, ctx context.Context, cancel context.CancelFunc, err error) {
	pos, err := parse(fs, args)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if len(pos) != 1 {
		return nil, nil, nil, nil, fmt.Errorf("%s takes one job, [KIND/]NAME\n%s", strings.TrimPrefix(fs.Name(), "trainyard "), Usage)
	}
	if s, err = cf.connect(); err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel = interruptible()
	if j, err = s.findJob(ctx, pos[0]); err != nil {
		cancel()
		return nil, nil, nil, nil, err
	}
	return s, j, ctx, cancel, nil
}

// openJob is openOne that also reads the job's pods.
func openJob(fs *flag.FlagSet, cf *clusterFlags, args []string) (s *session, j *job, pods []corev1.Pod, ctx context.Context, cancel context.CancelFunc, err error) {
	if s, j, ctx, cancel, err = openOne(fs, cf, args); err != nil {
		return nil, nil, nil, nil, nil, err
	}
	if pods, err = s.jobPods(ctx, j); err != nil {
		cancel()
		return nil, nil, nil, nil, nil, err
	}
	return s, j, pods, ctx, cancel, nil
}

// interruptible is a context ended by Ctrl-C or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
