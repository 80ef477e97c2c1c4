// Command trainyard is the Trainyard operator for distributed training jobs, and its command
// line (package cli):
//
//	trainyard [flags]                          run the operator against the cluster of --kubeconfig
//	trainyard render -f job.yaml ...           print what a job would create, without a cluster
//	trainyard get | describe JOB | logs JOB    the jobs of all four kinds on a cluster
//
// Named kubectl-trainyard on PATH, the binary is the kubectl plugin `kubectl trainyard`, which
// never runs the operator.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainyard/trainyard/cli"
	"github.com/trainyard/trainyard/controller"
)

func main() {
	args := os.Args[1:]
	plugin := strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == "kubectl-trainyard"
	var err error
	verb, rest, isVerb := cli.SplitVerb(args)
	switch {
	case isVerb:
		err = cli.Run(verb, rest, os.Stdout, os.Stderr)
	case plugin:
		// The plugin never runs the operator: what is no command is an error, but a call for help.
		err = cli.PluginUsage(args, os.Stderr)
	case len(args) > 0 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help"):
		fmt.Fprintln(os.Stderr, cli.Usage)
		err = controller.Main([]string{"-help"})
	default:
		err = controller.Main(args)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed, and asking for it is no failure
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainyard:", err)
		os.Exit(1)
	}
}
