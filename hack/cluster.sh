#!/usr/bin/env bash
# A local Kubernetes cluster for development and e2e tests: real etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler run as host processes (kwokctl, binary runtime),
# and KWOK plays the kubelet of $NODES fake nodes. Only the pinned binaries that hack/tools.sh
# builds into its cache are used; nothing is downloaded and everything listens on 127.0.0.1.
#
#   hack/cluster.sh up       start the cluster (no-op, exit 0, if it is already up and healthy;
#                            a dead or half-started cluster of that name is deleted and recreated)
#   hack/cluster.sh down     delete it and make sure none of its processes survives (exit 0 if none)
#   hack/cluster.sh status   component PIDs and RSS, or "no cluster"
#   hack/cluster.sh smoke    check the pod simulation on a running cluster (non-zero on failure)
#
# Environment:
#   DEVCLUSTER_DIR  work dir for everything the cluster writes (default: <repo>/.devcluster)
#   CLUSTER         cluster name (default: trainyard)
#   NODES           number of fake nodes created by `up` (default: 4)
#   NODE_PODS       pods each fake node advertises (capacity and allocatable; default: 110)
#   NODE_GPUS       nvidia.com/gpu each fake node advertises (default: 8). make bench-scale sets
#                   300 and 300 on 20 nodes: issue 19's harness, 300 one-GPU pods per node.
#                   Note: beyond 254 pods KWOK hands out pod IPs past the node's /24, which may
#                   repeat another node's; nothing routes to pod IPs here, so nothing notices.
#   KWOK_POD_DELETE_DELAY_MS  optional: the fake kubelet confirms a pod's deletion this many ms
#                   after its deletionTimestamp appears (default: at once). Note: KWOK v0.8 deletes
#                   by name, and when it lags it can act on a stale event of a pod already gone and
#                   delete the new pod of that name; a delay lets the new pod's event cancel it.
#                   make bench-scale's gang restart, 1,000 pods at once, needs it.
#   KWOK_POD_PARALLELISM  optional: how many pod stages the fake kubelet plays at once, for all the
#                   nodes together (KWOK's podPlayStageParallelism; default: KWOK's own, 4). Each
#                   stage is one status patch, so the pods it marks Running a second are this
#                   many over the patch's latency; a real kubelet per node would not share them.
#
# Files: $DEVCLUSTER_DIR/kubeconfig (context kwok-$CLUSTER), $DEVCLUSTER_DIR/bin/kubectl (the
# pinned kubectl), $DEVCLUSTER_DIR/kwok/clusters/$CLUSTER/{logs,pids,...} (kwokctl's own files),
# $DEVCLUSTER_DIR/cache (kubectl's cache: set KUBECACHEDIR to it too, or kubectl uses ~/.kube),
# $DEVCLUSTER_DIR/kwok/clusters/$CLUSTER/logs/audit.log (every write request: hack/kwok/audit-policy.yaml).
#
# Nodes are named kwok-node-<i>, have InternalIP 127.0.0.1 (the kwok controller's loopback address,
# where it serves the kubelet API: container logs) and a pod CIDR 127.(2+).x.0/24, and
# advertise cpu 32, memory 256Gi, pods NODE_PODS and nvidia.com/gpu NODE_GPUS (110 and 8 by default).
# KWOK manages the nodes labelled
# kwok.x-k8s.io/managed=true: remove that label to simulate a dead kubelet (NotReady after about
# 10 s, pods evicted about 5 s later). Pod behaviour is set by annotations: see hack/kwok/pod-stages.yaml.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/versions.sh
. "$repo/hack/versions.sh"

DEVCLUSTER_DIR=${DEVCLUSTER_DIR:-$repo/.devcluster}
case $DEVCLUSTER_DIR in /*) ;; *) DEVCLUSTER_DIR=$PWD/$DEVCLUSTER_DIR ;; esac
CLUSTER=${CLUSTER:-trainyard}
NODES=${NODES:-4}
NODE_PODS=${NODE_PODS:-110}
NODE_GPUS=${NODE_GPUS:-8}

export KWOK_WORKDIR=$DEVCLUSTER_DIR/kwok
export KUBECONFIG=$DEVCLUSTER_DIR/kubeconfig
# kubectl's discovery/HTTP cache, else it lands in ~/.kube/cache.
export KUBECACHEDIR=$DEVCLUSTER_DIR/cache
# kwokctl looks kubectl up on PATH: the pinned one must come first.
export PATH=$KUBE_BIN:$KWOK_BIN:$PATH

CLUSTER_DIR=$KWOK_WORKDIR/clusters/$CLUSTER
CONFIG=$DEVCLUSTER_DIR/kwokctl-$CLUSTER.yaml
KUBECTL=$DEVCLUSTER_DIR/bin/kubectl
MANAGED_LABEL=kwok.x-k8s.io/managed
SIM=sim.trainyard.dev
# Feature gates of the API server, controller-manager and scheduler, and the APIs served beyond
# the defaults: the kube-scheduler's own gang scheduling, its Workload and PodGroup API and its
# gang and topology plugins. Kubernetes 1.36 serves them as scheduling.k8s.io/v1alpha2 behind
# GenericWorkload and GangScheduling; 1.37 as v1beta1 behind GenericWorkload alone (GangScheduling
# is gone, and a gate the binaries do not know stops them).
kube_minor=${KUBE_VERSION#v1.}
kube_minor=${kube_minor%%.*}
if [ "$kube_minor" -ge 37 ]; then
  KUBE_FEATURE_GATES=GenericWorkload=true,TopologyAwareWorkloadScheduling=true
  KUBE_RUNTIME_CONFIG=scheduling.k8s.io/v1beta1=true
else
  KUBE_FEATURE_GATES=GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true
  KUBE_RUNTIME_CONFIG=scheduling.k8s.io/v1alpha2=true
fi

log() { printf '[cluster %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# Seconds elapsed since a $EPOCHREALTIME value, two decimals.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }

# "name pid" for every process kwokctl recorded for this cluster.
recorded_pids() {
  local f
  [ -d "$CLUSTER_DIR/pids" ] || return 0
  for f in "$CLUSTER_DIR"/pids/*.pid; do
    [ -e "$f" ] || continue
    printf '%s %s\n' "$(basename "$f" .pid)" "$(tr -dc 0-9 <"$f")"
  done
}

# True if pid is alive and is one of this cluster's processes (its command line names the
# cluster dir), so a recycled PID is never mistaken for ours.
ours() {
  local pid=$1
  local cmdline
  [ -n "$pid" ] || return 1
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  [[ $cmdline == *"$CLUSTER_DIR/"* ]]
}

# exiting: the process has released its memory (empty cmdline) but is not gone yet: still exiting,
# or a zombie its parent (init) has not reaped. `down` waits for both, so that nothing of the
# cluster shows in ps once it returns. Only PIDs we recorded are asked, within seconds of stopping
# them, so a reused PID is not a concern.
exiting() {
  [ -e "/proc/$1/stat" ]
}

healthy() {
  local name pid n=0
  while read -r name pid; do
    ours "$pid" || return 1
    n=$((n + 1))
  done < <(recorded_pids)
  [ "$n" -gt 0 ] && [ -x "$KUBECTL" ] && k get --raw /readyz >/dev/null 2>&1
}

ensure_binaries() {
  local t=$EPOCHREALTIME
  bash "$repo/hack/tools.sh" kube
  bash "$repo/hack/tools.sh" etcd
  bash "$repo/hack/tools.sh" kwok
  mkdir -p "$DEVCLUSTER_DIR/bin"
  ln -sfn "$KUBE_BIN/kubectl" "$KUBECTL"
  # The pinned helm too, once built (hack/tools.sh helm; make tools), for docs/operating.md.
  if [ -x "$HELM" ]; then ln -sfn "$HELM" "$DEVCLUSTER_DIR/bin/helm"; fi
  # Keep the work dir out of git without touching the repo's .gitignore.
  [ -f "$DEVCLUSTER_DIR/.gitignore" ] || printf '*\n' >"$DEVCLUSTER_DIR/.gitignore"
  log "binaries ready in $(since "$t")s"
}

# Directory of the pinned kwok module in the Go module cache (downloaded through the proxy if
# missing). Run outside any module so no go.mod/go.sum is touched.
kwok_module_dir() {
  (cd / && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION") |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p'
}

write_config() {
  local src
  src=$(kwok_module_dir)/kustomize/stage
  [ -f "$src/node/fast/node-initialize.yaml" ] || die "kwok $KWOK_VERSION stages not found under $src"
  cat >"$CONFIG" <<EOF
# Generated by hack/cluster.sh; do not edit.
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  bindAddress: 127.0.0.1
  kubeVersion: $KUBE_VERSION
  etcdVersion: ${ETCD_VERSION#v}
  kubeApiserverBinary: $KUBE_BIN/kube-apiserver
  kubeControllerManagerBinary: $KUBE_BIN/kube-controller-manager
  kubeSchedulerBinary: $KUBE_BIN/kube-scheduler
  kubectlBinary: $KUBE_BIN/kubectl
  etcdBinary: $ETCD_BIN/etcd
  kwokControllerBinary: $KWOK_BIN/kwok
  # Every write request is logged (hack/kwok/audit-policy.yaml) to $CLUSTER_DIR/logs/audit.log,
  # where tests count the operator's writes.
  kubeAuditPolicy: $repo/hack/kwok/audit-policy.yaml
  # The kube-scheduler's own gang scheduling: the Workload and PodGroup API served, and the gang
  # and topology plugins in the scheduler's default profile.
  kubeFeatureGates: $KUBE_FEATURE_GATES
  kubeRuntimeConfig: $KUBE_RUNTIME_CONFIG
  # Node liveness on a short leash: a node whose lease stops being renewed is NotReady after
  # about 10 s, and its pods are evicted 5 s later.
  heartbeatFactor: 1
  nodeLeaseDurationSeconds: 10
  nodeStatusUpdateFrequencyMilliseconds: 2000
  kubeControllerManagerNodeMonitorPeriodMilliseconds: 1000
  kubeControllerManagerNodeMonitorGracePeriodMilliseconds: 10000
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - {key: default-not-ready-toleration-seconds, value: "5"}
  - {key: default-unreachable-toleration-seconds, value: "5"}
  # The nodes' kubelet API (the kwok controller, for container logs) is reached at their
  # InternalIP on loopback, never by looking a hostname up.
  - {key: kubelet-preferred-address-types, value: InternalIP}
- name: kube-controller-manager
  extraArgs:
  # Loopback pod IPs are invalid in EndpointSlices: without this the endpoint controllers
  # retry every Service forever. Nothing routes traffic under KWOK anyway.
  - {key: controllers, value: "*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller"}
  # HPAs are looked at every second (default 15 s), so scaling an elastic job by HPA shows quickly.
  - {key: horizontal-pod-autoscaler-sync-period, value: 1s}
  # One instance needs no leader election; without it an API server outage longer than the
  # renew deadline (10 s) would make it exit (the e2e API-server-outage feature stops it 10 s).
  - {key: leader-elect, value: "false"}
- name: kube-scheduler
  extraArgs:
  - {key: leader-elect, value: "false"}
  # The scheduler has no delegated authentication or authorization here, so it serves only these
  # paths, to anyone on loopback; /debug/pprof lets the scale bench profile it.
  - {key: authorization-always-allow-paths, value: "/healthz,/readyz,/livez,/metrics,/debug/pprof/*", override: true}
- name: kwok-controller
  extraArgs:
  - {key: cidr, value: 127.2.0.0/16}
  - {key: manage-all-nodes, value: "false", override: true}
  - {key: manage-nodes-with-label-selector, value: $MANAGED_LABEL=true}
EOF
  local f
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    node/chaos/node-not-ready.yaml pod/fast/pod-delete.yaml; do
    printf -- '---\n# kwok %s kustomize/stage/%s\n' "$KWOK_VERSION" "$f"
    cat "$src/$f"
    if [ "$f" = pod/fast/pod-delete.yaml ] && [ -n "${KWOK_POD_DELETE_DELAY_MS:-}" ]; then
      # The fake kubelet confirms a pod's deletion this much later (see the variable above).
      printf '  delay:\n    durationMilliseconds: %d\n' "$KWOK_POD_DELETE_DELAY_MS"
    fi
  done >>"$CONFIG"
  { printf -- '---\n'; cat "$repo/hack/kwok/pod-stages.yaml"; } >>"$CONFIG"
  if [ -n "${KWOK_POD_PARALLELISM:-}" ]; then
    # A KwokConfiguration given here replaces KWOK's defaults of its options rather than adding to
    # them (a parallelism left out is 0, and KWOK refuses to start): every one is spelled out, at
    # KWOK v0.8's default but the pod stages'.
    cat >>"$CONFIG" <<EOF
---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: $KWOK_POD_PARALLELISM
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enableDebuggingHandlers: true
  enableProfilingHandler: true
  enableContentionProfiling: false
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
EOF
  fi
  # Every container's log is this file, in the CRI log format (<RFC3339Nano> stdout F <line>),
  # followed: kubectl logs -f shows the lines appended to it while it runs.
  printf '%s stdout F simulated container: no process runs on a KWOK node; this log is %s\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$DEVCLUSTER_DIR/container.log" >"$DEVCLUSTER_DIR/container.log"
  cat >>"$CONFIG" <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: trainyard-container-logs
spec:
  logs:
  - logsFile: $DEVCLUSTER_DIR/container.log
    previousLogsFile: $DEVCLUSTER_DIR/container.log
    follow: true
EOF
}

nodes_manifest() {
  local i hi lo
  for ((i = 1; i <= NODES; i++)); do
    hi=$((i / 256)) lo=$((i % 256))
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    $MANAGED_LABEL: "true"
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: kwok-node-$i
spec:
  podCIDR: 127.$((2 + hi)).$lo.0/24
  podCIDRs: [127.$((2 + hi)).$lo.0/24]
status:
  addresses:
  - {type: InternalIP, address: 127.0.0.1}
  - {type: Hostname, address: kwok-node-$i}
  capacity: &res {cpu: "32", memory: 256Gi, pods: "$NODE_PODS", nvidia.com/gpu: "$NODE_GPUS"}
  allocatable: *res
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    kubeletVersion: $KUBE_VERSION
EOF
  done
}

cmd_up() {
  if ! [[ $NODES =~ ^[0-9]+$ ]] || [ "$NODES" -lt 1 ] || [ "$NODES" -gt 30000 ]; then
    die "NODES must be 1..30000"
  fi
  local v
  [ -z "${KWOK_POD_PARALLELISM:-}" ] || [[ $KWOK_POD_PARALLELISM =~ ^[1-9][0-9]*$ ]] ||
    die "KWOK_POD_PARALLELISM must be a whole number above 0"
  for v in NODE_PODS NODE_GPUS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
  done
  ensure_binaries
  if [ -d "$CLUSTER_DIR" ]; then
    if healthy; then
      log "cluster $CLUSTER is already running (KUBECONFIG=$KUBECONFIG)"
      return 0
    fi
    log "cluster $CLUSTER exists but is not healthy: deleting it first"
    cmd_down
  fi
  write_config
  local t=$EPOCHREALTIME
  rm -f "$KUBECONFIG"
  if ! kwokctl create cluster --name "$CLUSTER" --runtime binary --config "$CONFIG" \
    --kubeconfig "$KUBECONFIG" --wait 2m >"$DEVCLUSTER_DIR/create-$CLUSTER.log" 2>&1; then
    tail -n 30 "$DEVCLUSTER_DIR/create-$CLUSTER.log" >&2
    die "kwokctl create cluster failed (log: $DEVCLUSTER_DIR/create-$CLUSTER.log)"
  fi
  log "control plane ready in $(since "$t")s"
  nodes_manifest | k create -f - >/dev/null
  k wait --for=condition=Ready node -l "$MANAGED_LABEL=true" --timeout=60s >/dev/null ||
    die "nodes not Ready within 60s"
  local deadline=$((SECONDS + 60))
  until k -n default get serviceaccount default >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "default ServiceAccount missing after 60s"
    sleep 0.2
  done
  log "cluster $CLUSTER up in $(since "$t")s: $NODES Ready nodes, default ServiceAccount"
  log "export KUBECONFIG=$KUBECONFIG; kubectl: $KUBECTL"
  cmd_status
}

# stop_operator stops the operator `make run` started against this cluster, if it still runs: the
# PID it recorded, if that process is still a trainyard on this cluster's kubeconfig.
stop_operator() {
  local f="$DEVCLUSTER_DIR/operator.pid" pid cmdline i
  [ -e "$f" ] || return 0
  pid=$(tr -dc 0-9 <"$f")
  rm -f "$f"
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 0
  [[ $cmdline == *trainyard*"--kubeconfig $KUBECONFIG"* ]] || return 0
  log "stopping the operator of make run (pid $pid)"
  kill "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do [ -e "/proc/$pid/stat" ] || return 0; sleep 0.1; done
  log "the operator (pid $pid) did not stop in 10 s: killing it"
  kill -9 "$pid" 2>/dev/null || true
}

cmd_down() {
  stop_operator
  if [ ! -d "$CLUSTER_DIR" ]; then
    log "no cluster $CLUSTER"
    rm -f "$KUBECONFIG"
    return 0
  fi
  local t=$EPOCHREALTIME name pid p i left=()
  local -a procs
  mapfile -t procs < <(recorded_pids)
  kwokctl delete cluster --name "$CLUSTER" --kubeconfig "$KUBECONFIG" >"$DEVCLUSTER_DIR/delete-$CLUSTER.log" 2>&1 ||
    log "kwokctl delete cluster failed (log: $DEVCLUSTER_DIR/delete-$CLUSTER.log); cleaning up by PID"
  for ((i = 0; i < 50; i++)); do
    left=()
    for p in "${procs[@]}"; do
      pid=${p#* }
      if ours "$pid" || exiting "$pid"; then left+=("$p"); fi
    done
    [ ${#left[@]} -eq 0 ] && break
    sleep 0.1
  done
  for p in "${left[@]}"; do
    name=${p% *} pid=${p#* }
    ours "$pid" || continue # gone, or a zombie: nothing to kill
    log "$name (pid $pid) survived kwokctl delete: killing it"
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do ours "$pid" || break; sleep 0.1; done
    if ours "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  for p in "${procs[@]}"; do
    pid=${p#* }
    ! ours "$pid" || die "${p% *} (pid $pid) is still running"
  done
  rm -rf "$CLUSTER_DIR"
  rm -f "$KUBECONFIG"
  log "cluster $CLUSTER deleted in $(since "$t")s (${#procs[@]} processes gone)"
}

cmd_status() {
  if [ ! -d "$CLUSTER_DIR" ]; then
    log "no cluster $CLUSTER"
    return 0
  fi
  local name pid rss total=0
  printf '%-26s %8s %9s\n' COMPONENT PID RSS_MB
  while read -r name pid; do
    if ours "$pid"; then
      rss=$(ps -o rss= -p "$pid" | tr -d ' ')
      total=$((total + rss))
      printf '%-26s %8s %9d\n' "$name" "$pid" $((rss / 1024))
    else
      printf '%-26s %8s %9s\n' "$name" "$pid" dead
    fi
  done < <(recorded_pids)
  printf '%-26s %8s %9d\n' total '' $((total / 1024))
  if k get --raw /readyz >/dev/null 2>&1; then
    log "cluster $CLUSTER ready at $(k config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
  else
    log "cluster $CLUSTER: apiserver not ready"
  fi
}

# ---- smoke test --------------------------------------------------------------------------------

SMOKE_NS=trainyard-smoke
smoke_failures=0

check() { # description command...
  local what=$1
  shift
  if "$@"; then
    log "ok   $what"
  else
    log "FAIL $what"
    smoke_failures=$((smoke_failures + 1))
  fi
}

# pod_field pod jsonpath
pod_field() { k -n "$SMOKE_NS" get pod "$1" -o "jsonpath=$2" 2>/dev/null; }

# wait_phase pod phase timeout_s: wait until the pod reaches the phase.
wait_phase() { k -n "$SMOKE_NS" wait "pod/$1" --for="jsonpath={.status.phase}=$2" --timeout="$3s" >/dev/null 2>&1; }

# field_is pod jsonpath expected
field_is() {
  local got
  got=$(pod_field "$1" "$2")
  [ "$got" = "$3" ] || { log "     $1 $2: want '$3', got '$got'"; return 1; }
}

running_like_kubelet() {
  local p=$1 c
  field_is "$p" '{.status.phase}' Running || return 1
  for c in PodScheduled Initialized ContainersReady Ready; do
    field_is "$p" "{.status.conditions[?(@.type==\"$c\")].status}" True || return 1
  done
  [[ $(pod_field "$p" '{.status.podIP}') == 127.* ]] || { log "     $p podIP not on loopback"; return 1; }
  [ -n "$(pod_field "$p" '{.status.containerStatuses[0].state.running.startedAt}')" ] ||
    { log "     $p has no running container state"; return 1; }
}

smoke_pod() { # name annotations(yaml flow map) containers(count) [resources]
  local name=$1 ann=$2 n=$3 res=${4:-} i
  printf -- '---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  annotations: %s\nspec:\n' "$name" "$ann"
  printf '  restartPolicy: Never\n  terminationGracePeriodSeconds: 0\n  containers:\n'
  for ((i = 1; i <= n; i++)); do
    printf '  - name: c%d\n    image: example.invalid/%s:1\n' "$i" "$name"
    [ -z "$res" ] || printf '    resources: %s\n' "$res"
  done
}

cmd_smoke() {
  healthy || die "no healthy cluster $CLUSTER: run '$0 up' first"
  local t0=$EPOCHREALTIME t
  trap 'k delete namespace "$SMOKE_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT
  k delete namespace "$SMOKE_NS" --ignore-not-found --timeout=60s >/dev/null
  k create namespace "$SMOKE_NS" >/dev/null
  local deadline=$((SECONDS + 30))
  until k -n "$SMOKE_NS" get serviceaccount default >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "no default ServiceAccount in $SMOKE_NS"
    sleep 0.2
  done

  t=$EPOCHREALTIME
  {
    smoke_pod idle '{}' 1
    smoke_pod victim '{}' 1
    smoke_pod ok "{$SIM/run-duration: \"2s\", $SIM/exit-code: \"0\"}" 1
    smoke_pod crash "{$SIM/exit-code: \"42\"}" 2
    smoke_pod late "{$SIM/start-delay: \"2s\"}" 1
    smoke_pod gpu '{}' 1 '{limits: {nvidia.com/gpu: 2}}'
  } | k -n "$SMOKE_NS" create -f - >/dev/null

  # (c) exit-code 42 without run-duration: Failed at once, 42 on every container.
  check "crash: Failed" wait_phase crash Failed 20
  check "crash: exitCode 42 on both containers" \
    field_is crash '{.status.containerStatuses[*].state.terminated.exitCode}' '42 42'
  check "crash: reason Error" field_is crash '{.status.containerStatuses[0].state.terminated.reason}' Error

  # (a) no annotation: Running with kubelet-like status.
  check "idle: Running" wait_phase idle Running 20
  check "idle: conditions, loopback podIP, running container" running_like_kubelet idle

  # (e) GPU request schedules.
  check "gpu: Running with 2 GPUs requested" wait_phase gpu Running 20
  check "gpu: bound to a node" test -n "$(pod_field gpu '{.spec.nodeName}')"

  # (b) run-duration 2s, exit-code 0: Succeeded no sooner than 2 s after creation.
  check "ok: Succeeded" wait_phase ok Succeeded 20
  local took
  took=$(since "$t")
  check "ok: took >= 2s ($took s)" awk -v x="$took" 'BEGIN { exit !(x >= 2) }'
  check "ok: exitCode 0, reason Completed" \
    field_is ok '{.status.containerStatuses[0].state.terminated.exitCode}/{.status.containerStatuses[0].state.terminated.reason}' 0/Completed
  check "ok: Ready False" field_is ok '{.status.conditions[?(@.type=="Ready")].status}' False

  # start-delay 2s: Running, and not before 2 s after creation.
  check "late: Running" wait_phase late Running 20
  took=$(since "$t")
  check "late: took >= 2s ($took s)" awk -v x="$took" 'BEGIN { exit !(x >= 2) }'

  # (d) annotating a Running pod with an exit code ends it.
  check "victim: Running" wait_phase victim Running 20
  t=$EPOCHREALTIME
  k -n "$SMOKE_NS" annotate pod victim "$SIM/exit-code=137" >/dev/null
  check "victim: Failed after annotation" wait_phase victim Failed 10
  log "     victim failed $(since "$t")s after the annotation"
  check "victim: exitCode 137" field_is victim '{.status.containerStatuses[0].state.terminated.exitCode}' 137

  # (a) still Running after all that.
  check "idle: still Running" running_like_kubelet idle

  # Deleting pods removes them (pod-delete stage).
  k delete namespace "$SMOKE_NS" --timeout=60s >/dev/null 2>&1 || true
  check "cleanup: namespace $SMOKE_NS gone" sh -c "! '$KUBECTL' --kubeconfig '$KUBECONFIG' get namespace $SMOKE_NS >/dev/null 2>&1"
  trap - EXIT
  if [ "$smoke_failures" -gt 0 ]; then
    die "smoke: $smoke_failures check(s) failed"
  fi
  log "smoke passed in $(since "$t0")s"
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  smoke) cmd_smoke ;;
  *)
    echo "usage: $0 up|down|status|smoke   (env: DEVCLUSTER_DIR, CLUSTER, NODES, NODE_PODS, NODE_GPUS)" >&2
    exit 2
    ;;
esac
