package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/trainyard/trainyard/apis/kueue"
	"github.com/trainyard/trainyard/render"
)

// placeholderUID stands in for the uid of a job that has not been created yet, so that the
// rendered owner references and torchrun's rendezvous id are well formed.
const placeholderUID = "00000000-0000-0000-0000-000000000000"

// runRender is `trainyard render`: the user's dry run. It prints what a job would create, and
// the decisions, without a cluster.
func runRender(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "the job manifest (- for standard input)")
	observed := fs.String("observed", "", "a multi-document YAML of the job's pods (with status), their nodes and installed PodGroup CRDs\n(without it: no pods yet, and every PodGroup CRD installed); a pod annotated\n"+render.ObservedAnnotation+": "+render.ObservedDeleted+" (or "+render.ObservedGone+") was deleted by someone else")
	nodeLostAfter := fs.Duration("node-lost-after", render.DefaultNodeLostAfter, "how long a node may be NotReady or unreachable before its pods are taken for lost (the operator's --node-lost-after)")
	nowFlag := fs.String("now", "", "the time to render at, RFC3339 (default: now)")
	namespace := fs.String("namespace", "default", "the namespace of a job whose manifest names none (as kubectl apply would)")
	fs.StringVar(namespace, "n", "default", "shorthand for --namespace")
	clusterDomain := fs.String("cluster-domain", render.DefaultClusterDomain, "the cluster's DNS domain (the kubelet's --cluster-domain)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("render: -f is required")
	}
	data, err := readFile(*file)
	if err != nil {
		return err
	}
	job, err := render.ReadJob(data)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	if job.UID == "" {
		job.UID = placeholderUID
	}
	if job.Namespace == "" {
		job.Namespace = *namespace
	}
	in := render.Input{Job: job, Now: time.Now(), ClusterDomain: *clusterDomain, NodeLostAfter: *nodeLostAfter}
	if *observed == "" {
		// Note: with nothing observed the question is "what will this job create?", so every
		// PodGroup kind counts as installed and a gang job shows the PodGroup a cluster with
		// its scheduler would get. --observed says which CRDs a cluster really has.
		in.InstalledCRDs = map[string]bool{}
		for _, crd := range render.PodGroupCRDs() {
			in.InstalledCRDs[crd] = true
		}
		for _, api := range render.KubernetesGangAPIs() {
			in.InstalledCRDs[api] = true
		}
		// Likewise Kueue counts as installed: a queued job shows the Workload it would get.
		in.InstalledCRDs[kueue.WorkloadCRD] = true
		if job.Queue != nil {
			in.Kueue = &render.KueueObservation{}
		}
	} else {
		data, err := readFile(*observed)
		if err != nil {
			return err
		}
		o, err := render.ReadObservations(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *observed, err)
		}
		in.Pods, in.DeletedPods, in.InstalledCRDs, in.Nodes = o.Pods, o.DeletedPods, o.InstalledCRDs, o.Nodes
		in.NameTakenBy = render.NameTakenBy(in.Job.Ref(), o.Jobs)
		if in.Kueue, err = render.ReadObservedKueue(data, &in.Job); err != nil {
			return fmt.Errorf("%s: %w", *observed, err)
		}
	}
	if *nowFlag != "" {
		if in.Now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
			return fmt.Errorf("--now: %w", err)
		}
	}
	out, err := render.Render(in)
	if err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	doc, err := render.Print(out)
	if err != nil {
		return err
	}
	_, err = stdout.Write(doc)
	return err
}

func readFile(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}
