package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trainyard/trainyard/hack/internal/localrun"
)

// The peer: Kubeflow's training-operator v1.8.1, built by `make peer` (hack/peer) into peerDir
// with the CRD and the ClusterRole of its own manifests beside it.
const (
	peerDir = "bin/peer"
	peerBin = peerDir + "/training-operator.v1"
	// peerCRD and peerRole are copies of its manifests/base/crds/kubeflow.org_pytorchjobs.yaml
	// and manifests/base/rbac/role.yaml (ClusterRole training-operator).
	peerCRD      = peerDir + "/kubeflow.org_pytorchjobs.yaml"
	peerRole     = peerDir + "/role.yaml"
	peerRoleName = "training-operator"
	// peerAgent is its client's user agent as the audit log shows it: client-go's default, named
	// after the binary.
	peerAgent = "training-operator.v1/"
	// peerSchemes: it serves the kind played, PyTorchJob (by default it serves six kinds and
	// waits for all six CRDs).
	peerSchemes = "--enable-scheme=pytorchjob"
)

// installPeer replaces the kubeflow.org PyTorchJob CRD with the peer's own and binds the peer's
// ClusterRole to the operator's ServiceAccount, as a user installing it would.
func installPeer(ctx context.Context, cl localrun.Cluster, conn localrun.Connection, id localrun.Identity, repo string) error {
	for _, f := range []string{peerCRD, peerRole} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			return fmt.Errorf("the peer: %w (run make peer)", err)
		}
	}
	logf("the peer: its PyTorchJob CRD and its ClusterRole %s", peerRoleName)
	if err := cl.Kubectl(ctx, "apply", "--server-side", "--force-conflicts", "-f", filepath.Join(repo, peerCRD)); err != nil {
		return err
	}
	if err := cl.BindClusterRole(ctx, conn, id, peerRoleName, filepath.Join(repo, peerRole)); err != nil {
		return fmt.Errorf("binding the peer's ClusterRole: %w", err)
	}
	return cl.Kubectl(ctx, "wait", "--for=condition=Established", "crd/pytorchjobs.kubeflow.org", "--timeout=60s")
}
