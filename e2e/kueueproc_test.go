//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"
)

// Kueue (sigs.k8s.io/kueue, hack/versions.sh) runs beside the operator, out of cluster, as a child
// process of the suite on loopback only: its webhooks are served on 127.0.0.1 with a certificate
// the suite makes, and the API server reaches them through URL-based webhook configurations that
// carry the suite's CA. Kueue's own certificate management is off. It is started for the local
// cluster only: another cluster's API server could not reach the suite's loopback.

// kueueProcess is the running Kueue manager.
type kueueProcess struct {
	cmd    *exec.Cmd
	exited chan error
	log    *os.File
	// removeOnStop are the files and folders the suite created outside its own folder (the
	// metrics certificate under /etc/kueue), removed after Kueue stops, deepest first.
	removeOnStop []string
}

var (
	kueueProc *kueueProcess
	// kueueSkip says why the Kueue features cannot run here, when they cannot.
	kueueSkip string
)

// Names of what the suite installs for Kueue.
const (
	kueueNamespace      = "kueue-system"
	kueueWebhookConfig  = "trainyard-e2e-kueue"
	kueueMetricsCertDir = "/etc/kueue/metrics/certs"
)

// kueueWebhookResources are the resources whose webhooks the suite registers: Kueue's own kinds
// and the two kubeflow.org integrations it runs. Note: the manifest also lists pods, Deployments,
// StatefulSets and batch Jobs (integrations not enabled here, served by no-op webhooks); they are
// left out so that no pod in the cluster depends on the Kueue process.
var kueueWebhookResources = []string{"workloads", "resourceflavors", "clusterqueues", "cohorts", "localqueues", "pytorchjobs", "tfjobs"}

// kueueHome is the cache folder of the pinned Kueue: its binary, CRDs and webhook manifest.
func kueueHome() (string, error) {
	out, err := exec.Command("bash", "-c", ". "+filepath.Join(repoRoot, "hack", "versions.sh")+` && echo "$KUEUE_BIN"`).Output()
	if err != nil {
		return "", fmt.Errorf("reading hack/versions.sh: %w", err)
	}
	home := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(home, "kueue")); err != nil {
		return "", fmt.Errorf("the pinned Kueue is not built (run make tools): %w", err)
	}
	return home, nil
}

// startKueue installs Kueue's CRDs, starts its manager and registers its webhooks.
func startKueue(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if localCluster == "" {
		kueueSkip = "Kueue runs only beside the local cluster (its webhooks listen on the suite's loopback)"
		return ctx, nil
	}
	home, err := kueueHome()
	if err != nil {
		return ctx, err
	}
	if _, err := kubectl(ctx, cfg, "", "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(home, "crd")); err != nil {
		return ctx, err
	}
	if err := waitCRDsEstablished(ctx, cfg); err != nil {
		return ctx, err
	}
	if _, err := kubectl(ctx, cfg, "", "create", "namespace", kueueNamespace); err != nil && !strings.Contains(err.Error(), "AlreadyExists") {
		return ctx, err
	}
	dir := filepath.Join(localCluster, "kueue")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ctx, err
	}
	p, caPEM, err := runKueue(home, dir, cfg.KubeconfigFile(), nil, "")
	if err != nil {
		return ctx, err
	}
	kueueProc = p
	if err := registerKueueWebhooks(ctx, cfg.Client().RESTConfig(), p, home, caPEM); err != nil {
		return ctx, err
	}
	return ctx, setUpKueueFlavor(ctx, cfg)
}

// runKueue writes the certificates and the configuration (gates set beside the suite's, and extra,
// YAML of further top-level settings, appended), starts Kueue and waits until it is ready.
func runKueue(home, dir, kubeconfig string, gates map[string]bool, extra string) (*kueueProcess, []byte, error) {
	ca, caKey, caPEM, err := newCA()
	if err != nil {
		return nil, nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	if err := writeServingCert(certDir, ca, caKey); err != nil {
		return nil, nil, err
	}
	p := &kueueProcess{exited: make(chan error, 1)}
	// Note: with its certificate management off, Kueue v0.19.2 serves metrics with a certificate it
	// reads from this fixed path (cmd/kueue/main.go; no flag or setting moves it), even when the
	// metrics server is disabled. The suite writes one there if none exists and removes what it wrote.
	if _, err := os.Stat(filepath.Join(kueueMetricsCertDir, "tls.crt")); errors.Is(err, os.ErrNotExist) {
		created, err := mkdirAllRecorded(kueueMetricsCertDir)
		p.removeOnStop = created
		if err == nil {
			err = writeServingCert(kueueMetricsCertDir, ca, caKey)
		}
		if err != nil {
			p.cleanUp()
			return nil, nil, fmt.Errorf("writing Kueue's metrics certificate under %s (the suite must be able to write there): %w", kueueMetricsCertDir, err)
		}
		p.removeOnStop = append([]string{filepath.Join(kueueMetricsCertDir, "tls.crt"), filepath.Join(kueueMetricsCertDir, "tls.key")}, p.removeOnStop...)
	}
	health, err := loopbackAddr()
	if err != nil {
		return nil, nil, err
	}
	webhook, err := loopbackAddr()
	if err != nil {
		return nil, nil, err
	}
	_, port, _ := net.SplitHostPort(webhook)
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: %q
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %s
  certDir: %q
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
featureGates:
%sintegrations:
  frameworks: [kubeflow.org/pytorchjob, kubeflow.org/tfjob]
  externalFrameworks:
  - PyTorchTrainingJob.v1beta1.batch.tensorstack.dev
  - TensorFlowTrainingJob.v1beta1.batch.tensorstack.dev
`, kueueNamespace, health, port, certDir, featureGates(gates)) + extra
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "kueue.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	p.log = logFile
	p.cmd = exec.Command(filepath.Join(home, "kueue"), "--config", configPath, "--zap-log-level=2")
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		p.cleanUp()
		return nil, nil, err
	}
	go func() { p.exited <- p.cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err
			_ = p.stop()
			return nil, nil, fmt.Errorf("kueue exited before it was ready (%v); log: %s", err, logFile.Name())
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + health + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && webhookListening(webhook) {
				return p, caPEM, nil
			}
		}
	}
	_ = p.stop()
	return nil, nil, fmt.Errorf("kueue was not ready within 60s; log: %s", logFile.Name())
}

// featureGates is the configuration's featureGates map: VisibilityOnDemand off (Kueue's
// visibility API server is not run), then gates, by name.
func featureGates(gates map[string]bool) string {
	all := map[string]bool{"VisibilityOnDemand": false}
	maps.Copy(all, gates)
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintf(&b, "  %s: %t\n", name, all[name])
	}
	return b.String()
}

func webhookListening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// stop ends Kueue by its PID (SIGTERM, then SIGKILL if it lingers) and removes the files the suite
// wrote outside its folder.
func (p *kueueProcess) stop() error {
	var err error
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			err = <-p.exited
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = nil // ended by the signal, as asked
		}
	}
	if p.log != nil {
		p.log.Close()
	}
	p.cleanUp()
	return err
}

func (p *kueueProcess) cleanUp() {
	for _, f := range p.removeOnStop {
		_ = os.Remove(f)
	}
	p.removeOnStop = nil
}

// mkdirAllRecorded is os.MkdirAll that returns the folders it created, deepest first.
func mkdirAllRecorded(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	return missing, os.MkdirAll(dir, 0o755)
}

// stopKueue removes Kueue's webhook configurations (no request may wait on a stopped process),
// then stops it.
func stopKueue(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	if kueueProc == nil {
		return ctx, nil
	}
	c, err := client.New(cfg.Client().RESTConfig(), client.Options{})
	var errs []error
	if err == nil {
		for _, o := range []client.Object{&admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{}} {
			o.SetName(kueueWebhookConfig)
			if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	} else {
		errs = append(errs, err)
	}
	errs = append(errs, kueueProc.stop())
	kueueProc = nil
	return ctx, errors.Join(errs...)
}

// registerKueueWebhooks installs Kueue's webhook configurations (its manifest, limited to
// kueueWebhookResources) in the cluster of rc, pointing at the process p by URL, with the suite's CA.
func registerKueueWebhooks(ctx context.Context, rc *rest.Config, p *kueueProcess, home string, caPEM []byte) error {
	data, err := os.ReadFile(filepath.Join(home, "webhook", "manifests.yaml"))
	if err != nil {
		return err
	}
	var cfgFile string
	for _, a := range p.cmd.Args {
		if strings.HasSuffix(a, "config.yaml") {
			cfgFile = a
		}
	}
	conf, err := os.ReadFile(cfgFile)
	if err != nil {
		return err
	}
	var kc struct {
		Webhook struct {
			Port int `json:"port"`
		} `json:"webhook"`
	}
	if err := yaml.Unmarshal(conf, &kc); err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", kc.Webhook.Port)
	url := func(svc *admissionv1.ServiceReference) *string {
		u := base
		if svc != nil && svc.Path != nil {
			u += *svc.Path
		}
		return &u
	}
	wanted := func(rules []admissionv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, res := range r.Resources {
				if slices.Contains(kueueWebhookResources, strings.Split(res, "/")[0]) {
					return true
				}
			}
		}
		return false
	}
	mutating := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookConfig}}
	validating := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookConfig}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		raw := map[string]any{}
		if err := dec.Decode(&raw); err != nil {
			break
		}
		b, _ := yaml.Marshal(raw)
		switch raw["kind"] {
		case "MutatingWebhookConfiguration":
			var m admissionv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(b, &m); err != nil {
				return err
			}
			for _, w := range m.Webhooks {
				if wanted(w.Rules) {
					w.ClientConfig = admissionv1.WebhookClientConfig{URL: url(w.ClientConfig.Service), CABundle: caPEM}
					mutating.Webhooks = append(mutating.Webhooks, w)
				}
			}
		case "ValidatingWebhookConfiguration":
			var v admissionv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(b, &v); err != nil {
				return err
			}
			for _, w := range v.Webhooks {
				if wanted(w.Rules) {
					w.ClientConfig = admissionv1.WebhookClientConfig{URL: url(w.ClientConfig.Service), CABundle: caPEM}
					validating.Webhooks = append(validating.Webhooks, w)
				}
			}
		}
	}
	if len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
		return fmt.Errorf("no Kueue webhooks for %v found in %s", kueueWebhookResources, filepath.Join(home, "webhook", "manifests.yaml"))
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return err
	}
	for _, o := range []client.Object{mutating, validating} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("registering Kueue's webhooks: %w", err)
		}
	}
	// The API server reads webhook configurations from its own informer: wait until a request
	// reaches Kueue's ResourceFlavor webhook (a server-side dry run is admitted through it).
	deadline := time.Now().Add(30 * time.Second)
	for {
		rf := kueueObject("ResourceFlavor", "", "trainyard-e2e-probe", map[string]any{})
		err := c.Create(ctx, rf, client.DryRunAll)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// newCA makes a self-signed ECDSA certificate authority for the suite's serving certificates.
func newCA() (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "trainyard-e2e-kueue-ca"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// writeServingCert writes tls.crt and tls.key for 127.0.0.1, signed by ca, into dir.
func writeServingCert(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// kueueObject is a kueue.x-k8s.io/v1beta2 object with the given spec.
func kueueObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = spec
	return u
}

// sideCluster is a second loopback control plane beside the suite's (hack/cluster.sh, KWOK nodes
// of 8 GPUs each, kwok-node-1 and on) with Trainyard's, Kubeflow's and Kueue's CRDs, a Kueue of its own (the pinned
// build, configured as the feature needs) and a Trainyard operator of its own. Its Kueue listens
// on the suite's loopback, so a side cluster runs beside the local cluster only.
type sideCluster struct {
	name     string // hack/cluster.sh's CLUSTER
	dir      string // its DEVCLUSTER_DIR
	nodes    int
	cfg      *envconf.Config
	client   client.Client
	kueue    *kueueProcess
	operator *operatorProcess
}

// startSideCluster starts the side cluster name of nodes nodes, its Kueue (with gates and extra,
// as runKueue takes them) and its operator; all of it is stopped when t's test ends.
func startSideCluster(ctx context.Context, t *testing.T, name string, nodes int, gates map[string]bool, kueueExtra string) *sideCluster {
	t.Helper()
	if kueueSkip != "" {
		t.Skip(kueueSkip)
	}
	start := time.Now()
	s := &sideCluster{name: name, dir: filepath.Join(repoRoot, ".devcluster", "e2e-"+name), nodes: nodes}
	t.Cleanup(s.stop(t))
	if err := s.script(ctx, "up"); err != nil {
		t.Fatalf("starting the side cluster %s: %v", name, err)
	}
	s.cfg = envconf.New().WithKubeconfigFile(filepath.Join(s.dir, "kubeconfig"))
	home, err := kueueHome()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repoRoot, "kustomize", "crd")},
		{"apply", "--server-side", "--force-conflicts", "-f", kubeflowCRDs},
		{"apply", "--server-side", "--force-conflicts", "-f", filepath.Join(home, "crd")},
		{"create", "namespace", kueueNamespace},
	} {
		if _, err := kubectl(ctx, s.cfg, "", args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := waitCRDsEstablished(ctx, s.cfg); err != nil {
		t.Fatal(err)
	}
	s.client = newClient(t, s.cfg)
	dir := filepath.Join(s.dir, "kueue")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, caPEM, err := runKueue(home, dir, s.cfg.KubeconfigFile(), gates, kueueExtra)
	if err != nil {
		t.Fatal(err)
	}
	s.kueue = p
	if err := registerKueueWebhooks(ctx, s.cfg.Client().RESTConfig(), p, home, caPEM); err != nil {
		t.Fatal(err)
	}
	if s.operator, err = startOperatorAs(s.cfg.KubeconfigFile(), "operator-"+name+".log"); err != nil {
		t.Fatal(err)
	}
	t.Logf("side cluster %s, its Kueue and its operator ready in %.1f s", name, time.Since(start).Seconds())
	return s
}

// onSide is an assessment of the side cluster *s, which the feature's setup starts.
func onSide(s **sideCluster, assess func(context.Context, *testing.T, *sideCluster)) features.Func {
	return func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
		assess(ctx, t, *s)
		return ctx
	}
}

func (s *sideCluster) script(ctx context.Context, verb string) error {
	return clusterScript(ctx, verb, "DEVCLUSTER_DIR="+s.dir, "CLUSTER="+s.name, fmt.Sprintf("NODES=%d", s.nodes))
}

// stop is the clean-up of the side cluster: its operator, its Kueue, then the cluster.
func (s *sideCluster) stop(t *testing.T) func() {
	return func() {
		if s.operator != nil {
			if err := s.operator.stop(); err != nil {
				t.Errorf("stopping the operator of side cluster %s: %v", s.name, err)
			}
		}
		if s.kueue != nil {
			if err := s.kueue.stop(); err != nil {
				t.Errorf("stopping the Kueue of side cluster %s: %v", s.name, err)
			}
		}
		if err := s.script(context.Background(), "down"); err != nil {
			t.Errorf("stopping the side cluster %s: %v", s.name, err)
		}
	}
}
