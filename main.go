// Command trainyard is the Trainyard operator for distributed training jobs.
//
//	trainyard [flags]                 run the operator against the cluster of --kubeconfig
//	trainyard render -f job.yaml ...  print what a job would create, without a cluster
package main

import (
	"fmt"
	"os"

	"github.com/trainyard/trainyard/controller"
)

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "render":
		err = runRender(args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help"):
		fmt.Fprintln(os.Stderr, "usage:\n  trainyard [operator flags]   run the operator (trainyard -help for flags)\n  trainyard render -f job.yaml [--observed objects.yaml] [--now RFC3339]")
		err = controller.Main([]string{"-help"})
	default:
		err = controller.Main(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainyard:", err)
		os.Exit(1)
	}
}
