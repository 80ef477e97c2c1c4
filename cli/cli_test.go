package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	batch "github.com/trainyard/trainyard/apis/batch/v1beta1"
	kubeflowv1 "github.com/trainyard/trainyard/apis/kubeflow/v1"
	"github.com/trainyard/trainyard/controller"
)

func TestSplitVerb(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantVerb string
		wantRest []string
		wantOK   bool
	}{
		"the verb first": {
			args: []string{"get", "-A"}, wantVerb: "get", wantRest: []string{"-A"}, wantOK: true,
		},
		"kubectl's global flags before the verb come first after it": {
			args:     []string{"--kubeconfig", "k", "-n", "team", "describe", "job", "--context=c"},
			wantVerb: "describe", wantRest: []string{"--kubeconfig", "k", "-n", "team", "job", "--context=c"}, wantOK: true,
		},
		"a flag's value that is a verb is not the verb": {
			args: []string{"-n", "logs", "get"}, wantVerb: "get", wantRest: []string{"-n", "logs"}, wantOK: true,
		},
		"flags with their values joined": {
			args: []string{"--namespace=team", "logs", "job"}, wantVerb: "logs", wantRest: []string{"--namespace=team", "job"}, wantOK: true,
		},
		"an operator flag before a verb is the operator's command line": {
			args: []string{"--leader-elect", "get"},
		},
		"no verb: the operator's flags": {
			args: []string{"--kubeconfig", "k", "--metrics-bind-address=0"},
		},
		"no arguments": {},
		"a global flag without its value": {
			args: []string{"--kubeconfig"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			verb, rest, ok := SplitVerb(tc.args)
			if verb != tc.wantVerb || ok != tc.wantOK {
				t.Errorf("SplitVerb(%q) = %q, ok %v; want %q, ok %v", tc.args, verb, ok, tc.wantVerb, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantRest, rest); diff != "" {
				t.Errorf("rest (-want +got):\n%s", diff)
			}
		})
	}
}

// findJob reads [KIND/]NAME as kubectl users write it, and says which part is wrong.
func TestFindJob(t *testing.T) {
	p := ptj(nil, batch.JobRunning)
	tf := &batch.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "both", Namespace: "ns"}}
	pt2 := ptj(nil, batch.JobRunning)
	pt2.Name, pt2.UID = "both", "uid-both"
	s := &session{client: fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(p, tf, pt2).Build(), namespace: "ns"}
	for ref, want := range map[string]string{
		"p":                    "PyTorchTrainingJob",
		"ptj/p":                "PyTorchTrainingJob",
		"PyTorchTrainingJob/p": "PyTorchTrainingJob",
		"pytorchtrainingjobs.batch.tensorstack.dev/p": "PyTorchTrainingJob",
		"tfj/both": "TensorFlowTrainingJob",
		"tfj/p":    `no TensorFlowTrainingJob "p" in namespace ns`,
		"foo/p":    `"foo" is not a kind of training job: say ptj, tfj, pytorchjob, tfjob (or no kind)`,
		"nothing":  `no training job "nothing" in namespace ns`,
		"both":     `"both" names jobs of several kinds: say which, e.g. ptj/both or tfj/both`,
	} {
		checkFindJob(t, s, ref, want)
	}
}

// checkFindJob checks that s.findJob(ref) finds a job of kind want, or fails saying want.
func checkFindJob(t *testing.T, s *session, ref, want string) {
	t.Helper()
	j, err := s.findJob(context.Background(), ref)
	got := ""
	if err != nil {
		got = err.Error()
	} else {
		got = j.info.kind
	}
	if got != want {
		t.Errorf("findJob(%q) = %s; want %s", ref, got, want)
	}
}

// TestFindJobKindNotInstalled: a job asked for by a kind whose CRD the cluster lacks is not said
// to be missing from the namespace: the kind is.
func TestFindJobKindNotInstalled(t *testing.T) {
	p := ptj(nil, batch.JobRunning)
	c := fake.NewClientBuilder().WithScheme(controller.Scheme()).WithObjects(p).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*kubeflowv1.PyTorchJob); ok {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: kubeflowv1.GroupVersion.Group, Kind: "PyTorchJob"}}
			}
			if _, ok := obj.(*kubeflowv1.TFJob); ok {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: kubeflowv1.GroupVersion.Group, Kind: "TFJob"}}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	s := &session{client: c, namespace: "ns"}
	for ref, want := range map[string]string{
		"pytorchjob/p": "the cluster has no PyTorchJob: its CRD pytorchjobs.kubeflow.org is not installed (the kubeflow.org kinds are opt-in: kubectl apply -k kustomize/kubeflow, or the chart's kubeflow.enabled=true)",
		"nothing":      `no training job "nothing" in namespace ns (the cluster has no PyTorchJob, TFJob: not installed)`,
		"p":            "PyTorchTrainingJob",
	} {
		checkFindJob(t, s, ref, want)
	}
}

// TestPluginUsage: `kubectl trainyard` with no command is a call for help (exit 0), but a
// mistyped command is an error, so that a script's `kubectl trainyard gett` does not pass.
func TestPluginUsage(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"help"}},
		{args: []string{"--help"}},
		{args: []string{"gett", "-A"}, wantErr: `unknown command "gett": the commands are render, get, describe, logs, pause, resume (kubectl trainyard help)`},
		{args: []string{"-n", "team", "gett"}, wantErr: `unknown command "gett": the commands are`},
		{args: []string{"-n", "team"}, wantErr: `no command after the flags: the commands are`},
		{args: []string{"--leader-elect"}, wantErr: `unknown flag "--leader-elect" before the command`},
	} {
		var out bytes.Buffer
		err := PluginUsage(tc.args, &out)
		switch {
		case tc.wantErr == "" && (err != nil || !strings.Contains(out.String(), "usage:")):
			t.Errorf("PluginUsage(%q) = %v, printed %q; want the usage and no error", tc.args, err, out.String())
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("PluginUsage(%q) = %v; want an error beginning %q", tc.args, err, tc.wantErr)
		case tc.wantErr != "" && out.Len() > 0:
			t.Errorf("PluginUsage(%q) printed the usage beside the error: %q", tc.args, out.String())
		}
	}
}

// TestWrongFlagIsOneLine: a wrong flag is the one line of the error main prints, naming -h, not
// the flag package's line and every flag after it; -h still lists the flags.
func TestWrongFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"get", "--bogus"}, {"describe", "j", "--tail", "3"}, {"logs", "j", "--tail", "x"}, {"pause", "j", "--timeout", "5"}, {"render", "--bogus"}} {
		var out, errOut bytes.Buffer
		err := Run(args[0], args[1:], &out, &errOut)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasSuffix(err.Error(), "(trainyard "+args[0]+" -h lists its flags)") {
			t.Errorf("%q: error %v; want one line naming -h", args, err)
		}
		if errOut.Len() > 0 || out.Len() > 0 {
			t.Errorf("%q printed beside the error:\n%s%s", args, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := Run("get", []string{"-h"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut.String(), "-all-namespaces") {
		t.Errorf("get -h: %v, printed %q; want the flags", err, errOut.String())
	}
}
