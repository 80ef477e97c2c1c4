package cli

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// runGet is `trainyard get`: the jobs of all four kinds in one table, with the reason a job waits.
func runGet(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trainyard get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clusterFlags
	cf.bind(fs, true)
	wide := fs.Bool("wide", false, "also print the waiting reason's message")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	s, err := cf.connect()
	if err != nil {
		return err
	}
	ctx, cancel := interruptible()
	defer cancel()
	jobs, err := s.listJobs(ctx, cf.allNamespaces)
	if err != nil {
		return err
	}
	if len(jobs) == 0 {
		where := "namespace " + s.namespace
		if cf.allNamespaces {
			where = "any namespace"
		}
		fmt.Fprintf(stderr, "No training jobs in %s.\n", where)
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 8, 3, ' ', 0)
	header := "KIND\tNAME\tPHASE\tRUNNING\tRESTARTS\tREASON\tAGE"
	if cf.allNamespaces {
		header = "NAMESPACE\t" + header
	}
	if *wide {
		header += "\tMESSAGE"
	}
	fmt.Fprintln(w, header)
	now := time.Now()
	for _, j := range jobs {
		reason, message := j.waiting()
		if reason == "" {
			reason = "-"
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%d\t%s\t%s", j.info.kind, j.obj.GetName(), j.phase(),
			j.running(), j.model.PodCount(), j.restarts(), reason, age(j.obj.GetCreationTimestamp(), now))
		if cf.allNamespaces {
			row = j.obj.GetNamespace() + "\t" + row
		}
		if *wide {
			row += "\t" + message
		}
		fmt.Fprintln(w, row)
	}
	return w.Flush()
}
