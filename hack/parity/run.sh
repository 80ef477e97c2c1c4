#!/usr/bin/env bash
# Runs hack/parity/cases.yaml (or $CASES) under one operator on the local cluster (make
# cluster-up) and writes its snapshots, raw (.json), normalized (.yaml, normalize.py) and as
# kubectl get prints them (.get.txt), to $OUT/<operator>[-$TAG].{8s,50s}.*:
#   hack/parity/run.sh peer        # Kubeflow's training-operator v1.8.1 (make peer), its own CRDs
#   hack/parity/run.sh trainyard   # bin/trainyard (make build), make install-kubeflow's CRDs
#   hack/parity/compare.py $OUT/peer.50s.yaml $OUT/trainyard.50s.yaml
# Gang: CASES=hack/parity/gang-volcano.yaml PEER_FLAGS=--gang-scheduler-name=volcano (the peer
# gangs every job it runs; Trainyard the jobs whose templates name the scheduler); TAG names the
# output files apart. v1.8.1 with Volcano creates no pod until the PodGroup has a phase, and the
# local cluster runs no Volcano: PODGROUP_PHASE=Inqueue gives every Volcano PodGroup that phase, as
# Volcano would, so that both operators' pods are compared.
# One operator at a time: each run installs its own CRDs (deleting the other's, and so every job),
# starts the operator, plays the cases (suspend/resume, a deleted pod), snapshots at 8 s and 50 s,
# stops the operator by its PID and deletes the namespace. Both operators run with the cluster's
# admin kubeconfig (no RBAC of their own) and no listener (metrics and probes off).
# Start the cluster with KWOK_POD_DELETE_DELAY_MS=1000 make cluster-up: KWOK's kubelet deletes a
# pod by name and, without the delay, often deletes the pod recreated under the old one's name in a
# restart (docs/local-cluster.md). The peer recreates such a pod silently; Trainyard reports it
# "deleted by someone else" and, under restartPolicy Never, fails the job: seen on 12 of the 49
# jobs of cases.yaml. The run warns when the cluster has no delay.
# Needs, beside the project's pinned tools: jq, and Python 3 with PyYAML (Debian: jq, python3-yaml).
# A developer's check: make test does not run it.
set -euo pipefail
cd "$(dirname "$0")/../.."
op=$1 OUT=${OUT:-.devcluster/parity} NS=parity CASES=${CASES:-hack/parity/cases.yaml} tag=$1${TAG:+-$TAG}
export KUBECONFIG=$PWD/.devcluster/kubeconfig KUBECACHEDIR=$PWD/.devcluster/cache
k=.devcluster/bin/kubectl
mkdir -p "$OUT"
grep -A12 'name: pod-delete$' .devcluster/kwokctl-trainyard.yaml | grep -q durationMilliseconds ||
  echo "$0: warning: the cluster has no KWOK_POD_DELETE_DELAY_MS: KWOK may delete recreated pods (see above)" >&2
$k delete namespace $NS --ignore-not-found --wait --timeout=120s
$k delete crd pytorchjobs.kubeflow.org tfjobs.kubeflow.org --ignore-not-found --wait
# The PodGroup CRDs: Volcano's stand-in of the e2e suite and scheduler-plugins' own (from the
# peer's module graph).
sp=$(go -C hack/peer list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)
$k apply --server-side -f e2e/testdata/podgroup-crds.yaml -f "$sp/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" >/dev/null
case $op in
peer)
  d=$(go -C hack/peer list -m -f '{{.Dir}}' github.com/kubeflow/training-operator)
  $k apply --server-side -f "$d/manifests/base/crds/kubeflow.org_pytorchjobs.yaml" -f "$d/manifests/base/crds/kubeflow.org_tfjobs.yaml"
  # A CRD just created has no conditions yet, and kubectl wait fails at once on it.
  for i in $(seq 120); do
    $k wait --for=condition=Established --timeout=60s crd/pytorchjobs.kubeflow.org crd/tfjobs.kubeflow.org 2>/dev/null && break
    [ "$i" -lt 120 ] || exit 1; sleep 0.5
  done
  cmd=(bin/peer/training-operator.v1 --enable-scheme=pytorchjob --enable-scheme=tfjob --metrics-bind-address=0 --health-probe-bind-address=0 ${PEER_FLAGS:-}) ;;
trainyard)
  make --no-print-directory install-kubeflow >/dev/null
  cmd=(bin/trainyard --kubeconfig "$KUBECONFIG" --metrics-bind-address=0 --health-probe-bind-address=0) ;;
*) echo "usage: $0 peer|trainyard" >&2; exit 2 ;;
esac
$k create namespace $NS --dry-run=client -o yaml | $k apply -f -
"${cmd[@]}" >"$OUT/$tag.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
sleep 5
kill -0 $pid || { cat "$OUT/$tag.log" >&2; exit 1; }
if [ -n "${PODGROUP_PHASE:-}" ]; then
  while sleep 1; do
    for g in $($k -n $NS get podgroups.scheduling.volcano.sh -o name 2>/dev/null); do
      $k -n $NS patch "$g" --type=merge -p "{\"status\":{\"phase\":\"$PODGROUP_PHASE\"}}" >/dev/null 2>&1 || true
    done
  done &
  pg=$!
  trap 'kill $pid $pg 2>/dev/null || true' EXIT
fi
# The snapshots are timed from the apply's end, so every job is at least 8 s old in the first.
# AGE still differs by how long the apply took: Trainyard's CRDs admitted cases.yaml's 49 jobs in
# 4 to 7 s, the peer's in 2 to 3 s (the jobs created first are that much older).
$k -n $NS apply -f "$CASES" >/dev/null
snap() {
  # First, so that AGE is the snapshot's time.
  { $k -n $NS get pytorchjobs; $k -n $NS get tfjobs; $k -n $NS get pytorchjobs,tfjobs -o wide; } >"$OUT/$tag.$1.get.txt" 2>&1
  {
    echo '{"jobs":'; $k -n $NS get pytorchjobs,tfjobs -o json | jq .items
    echo ',"pods":'; $k -n $NS get pods -o json | jq .items
    echo ',"services":'; $k -n $NS get services -o json | jq .items
    echo ',"events":'; $k -n $NS get events -o json | jq .items
    echo ',"hpas":'; $k -n $NS get horizontalpodautoscalers -o json | jq .items
    echo ',"podgroups":'; $k -n $NS get podgroups.scheduling.volcano.sh,podgroups.scheduling.x-k8s.io -o json | jq .items
    echo '}'
  } >"$OUT/$tag.$1.json"
  hack/parity/normalize.py "$OUT/$tag.$1.json" >"$OUT/$tag.$1.yaml"
}
sleep 8
snap 8s
# The cases' own steps, where the case exists: pods deleted by someone else, suspend, resume.
$k -n $NS delete pod pt-delpod-worker-1 --wait=false --ignore-not-found
$k -n $NS delete pod tf-delpod-worker-1 --wait=false --ignore-not-found
$k -n $NS patch pytorchjob pt-suspend --type=merge -p '{"spec":{"runPolicy":{"suspend":false}}}' 2>/dev/null || true
for j in pt-suspend-running pt-suspend-resume; do
  $k -n $NS patch pytorchjob $j --type=merge -p '{"spec":{"runPolicy":{"suspend":true}}}' 2>/dev/null || true
done
sleep 17
$k -n $NS patch pytorchjob pt-suspend-resume --type=merge -p '{"spec":{"runPolicy":{"suspend":false}}}' 2>/dev/null || true
sleep 25
snap 50s
kill $pid ${pg:-}; wait $pid || true; trap - EXIT
$k delete namespace $NS --wait --timeout=120s
echo "$OUT/$tag.50s.yaml"
