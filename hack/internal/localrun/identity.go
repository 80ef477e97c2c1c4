package localrun

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Identity is a ServiceAccount with the operator's RBAC, and a kubeconfig holding a token of it.
// Note: the cluster's admin kubeconfig is system:masters, which API Priority and Fairness exempts;
// an operator run under it never queues nor sees a 429, unlike any operator installed for real.
type Identity struct {
	Namespace, Name string
	// Kubeconfig is the cluster's kubeconfig with the token as its only user.
	Kubeconfig string
	// Config is a client config of the token (QPS and burst left to the caller).
	Config  *rest.Config
	Expires time.Time
}

// User is the identity's user name as the API server sees it.
func (id Identity) User() string {
	return "system:serviceaccount:" + id.Namespace + "/" + id.Name
}

// OperatorIdentity creates the ServiceAccount namespace/name, applies the operator's ClusterRoles
// (kustomize/rbac/role.yaml, and with kubeflow kustomize/kubeflow/role.yaml) with the pinned
// kubectl, binds them to it, asks the TokenRequest API for a token valid for valid, and writes a
// kubeconfig with the token and the cluster's server and CA to path.
func (c Cluster) OperatorIdentity(ctx context.Context, conn Connection, namespace, name string, kubeflow bool, valid time.Duration, path string) (Identity, error) {
	id := Identity{Namespace: namespace, Name: name, Kubeconfig: path}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}},
	} {
		if err := createIfAbsent(ctx, conn, o); err != nil {
			return id, err
		}
	}
	roles := map[string]string{"trainyard-manager": filepath.Join(c.Repo, "kustomize", "rbac", "role.yaml")}
	if kubeflow {
		roles["trainyard-manager-kubeflow"] = filepath.Join(c.Repo, "kustomize", "kubeflow", "role.yaml")
	}
	for role, file := range roles {
		if err := c.BindClusterRole(ctx, conn, id, role, file); err != nil {
			return id, err
		}
	}

	cs, err := kubernetes.NewForConfig(conn.Config)
	if err != nil {
		return id, err
	}
	seconds := int64(valid.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return id, fmt.Errorf("a token for the ServiceAccount %s/%s: %w", namespace, name, err)
	}
	id.Expires = tr.Status.ExpirationTimestamp.Time

	kc, err := clientcmd.LoadFromFile(c.Kubeconfig())
	if err != nil {
		return id, err
	}
	kc.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}}
	for _, kctx := range kc.Contexts {
		kctx.AuthInfo = name
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return id, err
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return id, err
	}
	if id.Config, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
		return id, err
	}
	return id, nil
}

// Flow is how API Priority and Fairness classified a request.
type Flow struct {
	FlowSchema, PriorityLevel string
	// Exempt: the priority level is of type Exempt (never queued, never rejected).
	Exempt bool
}

func (f Flow) String() string {
	kind := "limited"
	if f.Exempt {
		kind = "exempt"
	}
	return fmt.Sprintf("FlowSchema %s, priority level %s (%s)", f.FlowSchema, f.PriorityLevel, kind)
}

// FlowOf makes one GET of path with cfg and names the FlowSchema and priority level APF put it
// under, from the response's X-Kubernetes-PF-FlowSchema-UID and -PriorityLevel-UID headers
// (looked up with conn, which may read the flowcontrol objects).
func FlowOf(ctx context.Context, cfg *rest.Config, conn Connection, path string) (Flow, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Flow{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		return Flow{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Flow{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Flow{}, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	fsUID := types.UID(resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"))
	plUID := types.UID(resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"))
	if fsUID == "" || plUID == "" {
		return Flow{}, fmt.Errorf("GET %s: no X-Kubernetes-PF-* headers in the response", path)
	}
	f := Flow{FlowSchema: "uid " + string(fsUID), PriorityLevel: "uid " + string(plUID)}
	var schemas flowcontrolv1.FlowSchemaList
	if err := conn.Kube.List(ctx, &schemas); err != nil {
		return f, err
	}
	for _, s := range schemas.Items {
		if s.UID == fsUID {
			f.FlowSchema = s.Name
		}
	}
	var levels flowcontrolv1.PriorityLevelConfigurationList
	if err := conn.Kube.List(ctx, &levels); err != nil {
		return f, err
	}
	for _, l := range levels.Items {
		if l.UID == plUID {
			f.PriorityLevel = l.Name
			f.Exempt = l.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
		}
	}
	return f, nil
}

// BindClusterRole applies the ClusterRole role from file with the pinned kubectl and binds it to
// id's ServiceAccount (a binding named after the namespace too, so that a bench and the e2e
// install never share one).
func (c Cluster) BindClusterRole(ctx context.Context, conn Connection, id Identity, role, file string) error {
	if err := c.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", file); err != nil {
		return err
	}
	return createIfAbsent(ctx, conn, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: id.Namespace + "-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: id.Namespace, Name: id.Name}},
	})
}

func createIfAbsent(ctx context.Context, conn Connection, o client.Object) error {
	if err := conn.Kube.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
	}
	return nil
}
