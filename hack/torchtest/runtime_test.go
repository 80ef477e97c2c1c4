//go:build torch

package torchtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runtime is one PyTorch the jobs run under: Debian 12's python3-torch on this machine (torch
// 1.13, Python 3.11), or Debian 13's (torch 2.x, Python 3.13) in a root of its own that
// hack/torch.sh builds with debootstrap into the per-user cache and the test enters with chroot.
// Debian 12 cannot install Debian 13's torch beside its own Python, and torch 2.x is what users run.
type runtime struct {
	// root is the directory the processes are chrooted into, "" for this machine.
	root string
	// version is torch.__version__, read at the start.
	version string
	// env is what the runtime's image would set in its environment, beside the pod's.
	env []string
}

func (r runtime) name() string {
	where := "this machine"
	if r.root != "" {
		where = "its own root"
	}
	return fmt.Sprintf("torch %s, %s", r.version, where)
}

// The root runtime's paths: its directory from TRAINYARD_TORCH_ROOT (hack/versions.sh's
// TORCH_ROOT, passed by make test-torch), the torch major.minor it must hold from
// TRAINYARD_TORCH_ROOT_VERSION, and where each pod's working directory is mounted inside it.
const (
	rootEnv        = "TRAINYARD_TORCH_ROOT"
	rootVersionEnv = "TRAINYARD_TORCH_ROOT_VERSION"
	rootWorkdir    = "/trainyard"
)

// python is Debian's interpreter, the one python3-torch is installed for (a pyenv or venv python
// earlier on PATH would not have torch), on this machine and in the root alike.
const python = "/usr/bin/python3"

// checkTorch is what a runtime must pass to be used: torch imports, with gloo. It prints its
// version and whether its TCPStore has the libuv server that torch 2.4 and later ask for by default
// (Debian's torch 2.6 is built without it; torch 1.x has no such choice). The store it tries
// listens for a moment, in a network namespace of the check's own.
const checkTorch = `import torch, torch.distributed as d
assert d.is_available() and d.is_gloo_available()
uv = "n/a"
try:
    d.TCPStore("127.0.0.1", 0, is_master=True, use_libuv=True)
    uv = "libuv"
except TypeError:
    pass
except RuntimeError as e:
    if "libuv" not in str(e):
        raise
    uv = "no-libuv"
print(torch.__version__, uv)`

// runtimes are the PyTorch installations to run every shape under, or what is missing for one.
func runtimes() ([]runtime, string) {
	if os.Geteuid() != 0 {
		return nil, "not root (network namespaces need it)"
	}
	for _, bin := range []string{"ip", "unshare", "chroot", "mount"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, bin + " is not installed (Debian's iproute2, util-linux, coreutils)"
		}
	}
	var out []runtime
	if _, err := os.Stat("/usr/bin/torchrun"); err != nil {
		return nil, "Debian's python3-torch is not installed (no /usr/bin/torchrun)"
	}
	host := runtime{}
	if err := host.readVersion(); err != nil {
		return nil, err.Error()
	}
	out = append(out, host)

	root := os.Getenv(rootEnv)
	if root == "" {
		return nil, rootEnv + " is not set (make test-torch sets it to the root hack/torch.sh builds)"
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/torchrun")); err != nil {
		return nil, fmt.Sprintf("the root %s has no usr/bin/torchrun (hack/torch.sh builds it)", root)
	}
	r := runtime{root: root}
	if err := r.readVersion(); err != nil {
		return nil, err.Error()
	}
	if want := os.Getenv(rootVersionEnv); want != "" && !strings.HasPrefix(r.version, want+".") {
		return nil, fmt.Sprintf("the root %s holds torch %s, hack/versions.sh pins %s", root, r.version, want)
	}
	return append(out, r), ""
}

// readVersion runs checkTorch in the runtime and sets its version and the environment its image
// would have.
func (r *runtime) readVersion() error {
	// Note: mount and network namespaces of its own, so the root's mounts end with the check and
	// its store listens on no interface of this machine.
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--net", "--"}, r.wrap(os.TempDir(), []string{python, "-c", checkTorch})...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + r.workdir(os.TempDir())}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s cannot import torch with gloo%s: %v: %s", python, r.in(), err, strings.TrimSpace(string(out)))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	version, uv, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), " ")
	r.version = version
	if uv == "no-libuv" {
		// Note: an image of Debian's torch 2.x sets this, as torch's error says; the pod's
		// environment stays what Trainyard rendered.
		r.env = append(r.env, "USE_LIBUV=0")
	}
	return nil
}

func (r runtime) in() string {
	if r.root == "" {
		return ""
	}
	return " in " + r.root
}

// wrap is argv as this runtime starts it in workdir: as it is on this machine; in the root, behind
// a shell that mounts what a container would have (the namespace's /etc/hosts and resolv.conf,
// /dev, /proc, /sys, the working directory) into the root, and chroots there. The mounts are made
// in the caller's mount namespace, which must be one of its own (`ip netns exec` makes one).
func (r runtime) wrap(workdir string, argv []string) []string {
	if r.root == "" {
		return argv
	}
	mount, _ := exec.LookPath("mount")
	chroot, _ := exec.LookPath("chroot")
	script := `r=$1 w=$2 mount=$3 chroot=$4; shift 4
for f in hosts resolv.conf; do
  if [ -e "/etc/$f" ]; then "$mount" --bind "/etc/$f" "$r/etc/$f" || exit 1; fi
done
"$mount" --rbind /dev "$r/dev" && "$mount" -t proc proc "$r/proc" && "$mount" --rbind /sys "$r/sys" &&
"$mount" --bind "$w" "$r` + rootWorkdir + `" &&
exec "$chroot" "$r" /bin/sh -c 'cd ` + rootWorkdir + ` && exec "$@"' sh "$@"`
	return append([]string{"/bin/sh", "-c", script, "sh", r.root, workdir, mount, chroot}, argv...)
}

// workdir is where the processes find the job's files: the pod's working directory on this
// machine, the mount point inside the root.
func (r runtime) workdir(dir string) string {
	if r.root == "" {
		return dir
	}
	return rootWorkdir
}
