package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
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
	var observed observedFiles
	fs.Var(&observed, "observed", "a multi-document YAML of the job's pods (with status), their nodes and installed PodGroup CRDs;\nrepeatable, the files read as one (without it: no pods yet, and every PodGroup CRD installed); a pod annotated\n"+render.ObservedAnnotation+": "+render.ObservedDeleted+" (or "+render.ObservedGone+") was deleted by someone else")
	nodeLostAfter := fs.Duration("node-lost-after", render.DefaultNodeLostAfter, "how long a node may be NotReady or unreachable before its pods are taken for lost (the operator's --node-lost-after)")
	nowFlag := fs.String("now", "", "the time to render at, RFC3339 (default: now)")
	namespace := fs.String("namespace", "default", "the namespace of a job whose manifest names none (as kubectl apply would)")
	fs.StringVar(namespace, "n", "default", "shorthand for --namespace")
	clusterDomain := fs.String("cluster-domain", render.DefaultClusterDomain, "the cluster's DNS domain (the kubelet's --cluster-domain)")
	if err := parseFlags(fs, args); err != nil {
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
	if len(observed) == 0 {
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
		data, err := observed.read()
		if err != nil {
			return err
		}
		if err := in.Observe(data); err != nil {
			return fmt.Errorf("%s: %w", observed, err)
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

// observedFiles are the --observed files, in order. The flag may be given more than once (the
// pods in one file, `kubectl get nodes -o yaml` in another): each file is read as further
// documents of one stream.
//
// Note: a plain string flag kept only the last file, so the pods of an earlier one were silently
// not observed and render decided to create every pod again.
type observedFiles []string

func (o observedFiles) String() string { return strings.Join(o, ", ") }

func (o *observedFiles) Set(name string) error {
	*o = append(*o, name)
	return nil
}

// read joins the files' documents, each file starting a document of its own (kubectl's output
// has no leading "---", so two files put end to end would merge into one document).
func (o observedFiles) read() ([]byte, error) {
	var all []byte
	for _, name := range o {
		data, err := readFile(name)
		if err != nil {
			return nil, err
		}
		all = append(append(all, "\n---\n"...), data...)
	}
	return all, nil
}
