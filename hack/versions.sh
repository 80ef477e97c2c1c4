# Pinned versions of every tool the project builds, and where they are cached.
# Sourced by the other hack/ scripts; the Makefile reads the same file.
# The control plane's Kubernetes, the newest release; TRAINYARD_KUBE_VERSION picks another by hand.
# The e2e suite also starts a cluster at the previous release, for the kube-scheduler's gang
# scheduling, whose API changed between the two (TestKubernetesGangPreviousRelease).
KUBE_VERSION=${TRAINYARD_KUBE_VERSION:-v1.37.2}
KUBE_PREVIOUS_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
CONTROLLER_TOOLS_VERSION=v0.23.0
# The e2e suite's second scheduler: scheduler-plugins' kube-scheduler (Coscheduling) and its
# PodGroup controller, built against its own Kubernetes libraries (v1.32).
SCHEDULER_PLUGINS_VERSION=v0.32.7
# Kueue's manager, run by the e2e suite beside the operator (e2e/kueue_test.go).
KUEUE_VERSION=v0.19.2
# Helm renders and lints charts/trainyard (make test-chart) and installs it in e2e.
HELM_VERSION=v4.3.1
# Prometheus 3.16 (its Go module is numbered v0.316.0): promtool plays the alerts
# (make test-monitoring) and the e2e suite's Prometheus scrapes the operator for the dashboard.
PROMETHEUS_VERSION=v0.316.0
# make test-torch's second PyTorch: Debian 13's python3-torch in a root of its own (hack/torch.sh
# builds it with debootstrap from Debian's mirror); the test refuses another major.minor. Another
# suite can be tried by hand, e.g. TORCH_ROOT_SUITE=sid TORCH_ROOT_VERSION=2.14 (sid moves daily,
# so it is never the default).
TORCH_ROOT_SUITE=${TORCH_ROOT_SUITE:-trixie}
TORCH_ROOT_VERSION=${TORCH_ROOT_VERSION:-2.6}
TORCH_ROOT_MIRROR=${TORCH_ROOT_MIRROR:-http://deb.debian.org/debian}

# Built binaries live outside the repo, keyed by version, so a second run costs nothing.
TRAINYARD_CACHE=${TRAINYARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainyard}
KUBE_BIN=$TRAINYARD_CACHE/kubernetes-$KUBE_VERSION
ETCD_BIN=$TRAINYARD_CACHE/etcd-$ETCD_VERSION
KWOK_BIN=$TRAINYARD_CACHE/kwok-$KWOK_VERSION
SCHEDULER_PLUGINS_BIN=$TRAINYARD_CACHE/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION
KUEUE_BIN=$TRAINYARD_CACHE/kueue-$KUEUE_VERSION
CONTROLLER_GEN=$TRAINYARD_CACHE/controller-tools-$CONTROLLER_TOOLS_VERSION/controller-gen
HELM=$TRAINYARD_CACHE/helm-$HELM_VERSION/helm
PROMETHEUS_BIN=$TRAINYARD_CACHE/prometheus-$PROMETHEUS_VERSION
TORCH_ROOT=$TRAINYARD_CACHE/torch-root-$TORCH_ROOT_SUITE
# envtest wants etcd and kube-apiserver in one folder.
ENVTEST_ASSETS=$TRAINYARD_CACHE/envtest-$KUBE_VERSION-$ETCD_VERSION
