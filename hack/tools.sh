#!/usr/bin/env bash
# Builds the pinned control plane and code generators into the version-keyed cache
# (hack/versions.sh), from the Go module proxy only. Whatever is already there is kept.
#
#   hack/tools.sh [all|kube|kube-previous|etcd|kwok|scheduler-plugins|kueue|controller-gen|helm|prometheus|envtest]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"

log() { printf '[tools %s] %s\n' "$(date +%T)" "$*" >&2; }

# k8s.io/kubernetes and etcd's server cannot be `go install`ed: their go.mod files carry
# replace directives. Each is built from a throwaway wrapper module instead.
wrapper() { # dir module-path
  mkdir -p "$1"
  [ -f "$1/go.mod" ] || printf 'module %s\n\ngo 1.26.0\n' "$2" >"$1/go.mod"
}

build_etcd() {
  if [ -x "$ETCD_BIN/etcd" ]; then log "etcd $ETCD_VERSION found in cache"; return; fi
  local d=$TRAINYARD_CACHE/src/etcd-$ETCD_VERSION t=$SECONDS
  wrapper "$d" trainyard.local/etcd
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$d/tools.go"
  log "building etcd $ETCD_VERSION"
  (cd "$d" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy &&
    go build -trimpath -o "$ETCD_BIN/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$ETCD_BIN/etcd.tmp" "$ETCD_BIN/etcd"
  log "etcd $ETCD_VERSION built in $((SECONDS - t))s"
}

build_kube() {
  local need=() b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [ -x "$KUBE_BIN/$b" ] || need+=("k8s.io/kubernetes/cmd/$b")
  done
  if [ ${#need[@]} -eq 0 ]; then log "kubernetes $KUBE_VERSION found in cache"; return; fi
  local d=$TRAINYARD_CACHE/src/kubernetes-$KUBE_VERSION t=$SECONDS
  local staging=v0.${KUBE_VERSION#v1.} minor=${KUBE_VERSION#v1.}
  minor=${minor%%.*}
  mkdir -p "$d"
  if [ ! -f "$d/go.mod" ]; then
    # kubernetes requires its staging modules at v0.0.0 and replaces them with ./staging/...;
    # a consumer replaces each with the matching published tag.
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      printf 'module trainyard.local/kubernetes\n\ngo 1.26.0\n\nreplace (\n'
      sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
      printf ')\n'
    } >"$d/go.mod"
  fi
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"$d/tools.go"
  # Without the stamps the binaries report v0.0.0-master and kubectl warns about skew.
  local x="-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1"
  x="$x -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  x="$x -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1"
  x="$x -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  log "building ${need[*]##*/} $KUBE_VERSION (cold: about 4 minutes on 2 cores)"
  mkdir -p "$KUBE_BIN/.tmp"
  (cd "$d" && { grep -q "k8s.io/kubernetes $KUBE_VERSION" go.mod || go get "k8s.io/kubernetes@$KUBE_VERSION"; } &&
    go mod tidy && go build -trimpath -ldflags "$x" -o "$KUBE_BIN/.tmp/" "${need[@]}")
  mv "$KUBE_BIN"/.tmp/* "$KUBE_BIN/" && rmdir "$KUBE_BIN/.tmp"
  log "kubernetes $KUBE_VERSION built in $((SECONDS - t))s"
}

build_kwok() {
  if [ -x "$KWOK_BIN/kwok" ] && [ -x "$KWOK_BIN/kwokctl" ]; then log "kwok $KWOK_VERSION found in cache"; return; fi
  local t=$SECONDS
  log "building kwok and kwokctl $KWOK_VERSION"
  GOBIN=$KWOK_BIN go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
  log "kwok $KWOK_VERSION built in $((SECONDS - t))s"
}

# scheduler-plugins' kube-scheduler (cmd/scheduler: the upstream scheduler with Coscheduling and the
# other plugins registered), its controller (cmd/controller: it writes the PodGroups' status) and
# its CRDs. Like k8s.io/kubernetes, its go.mod replaces Kubernetes' staging modules, so it is built
# from a wrapper module that repeats those replace directives. It is built against its own
# Kubernetes libraries (v1.32), not $KUBE_VERSION.
build_scheduler_plugins() {
  if [ -x "$SCHEDULER_PLUGINS_BIN/kube-scheduler" ] && [ -x "$SCHEDULER_PLUGINS_BIN/controller" ] &&
    [ -f "$SCHEDULER_PLUGINS_BIN/crd/scheduling.x-k8s.io_podgroups.yaml" ]; then
    log "scheduler-plugins $SCHEDULER_PLUGINS_VERSION found in cache"
    return
  fi
  local d=$TRAINYARD_CACHE/src/scheduler-plugins-$SCHEDULER_PLUGINS_VERSION t=$SECONDS m=sigs.k8s.io/scheduler-plugins
  mkdir -p "$d"
  if [ ! -f "$d/go.mod" ]; then
    local info gomod src n
    info=$(cd / && go mod download -json "$m@$SCHEDULER_PLUGINS_VERSION")
    gomod=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' <<<"$info")
    src=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$info")
    [ -f "$gomod" ] && [ -f "$src/go.sum" ] || { log "no go.mod or go.sum for $m@$SCHEDULER_PLUGINS_VERSION"; return 1; }
    {
      printf 'module trainyard.local/scheduler-plugins\n\ngo 1.26.0\n\nreplace (\n'
      # Both forms: the lines of a replace block and single-line `replace a => b v`.
      sed -n -e 's#^replace[[:space:]]\{1,\}\([^ (]\{1,\} => .*\)#\t\1#p' \
        -e '/^replace[[:space:]]*($/,/^)$/s#^[[:space:]]\{1,\}\([^ ]\{1,\} => .*\)#\t\1#p' "$gomod"
      printf ')\n'
    } >"$d/go.mod"
    # Its go.sum seeds ours: the checksum database reachable here has no entry for some of its
    # dependencies (k8s.io/kms v0.32.7 and others: 404), and the module's own go.sum vouches for them.
    cp "$src/go.sum" "$d/go.sum" && chmod u+w "$d/go.sum"
    # k8s.io/kubernetes v1.32.7 requires these staging modules, the proxy reachable here refuses
    # them at v0.32.7 (403), and no package of theirs is built into either binary: each is
    # replaced by an empty local module, so the build fails if one were ever needed.
    for n in endpointslice externaljwt kube-controller-manager sample-apiserver; do
      mkdir -p "$d/stub/$n"
      printf 'module k8s.io/%s\n\ngo 1.23\n' "$n" >"$d/stub/$n/go.mod"
      sed -i "s#^\tk8s.io/$n => .*#\tk8s.io/$n => ./stub/$n#" "$d/go.mod"
    done
  fi
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/controller"\n\t_ "%s/cmd/scheduler"\n)\n' "$m" "$m" >"$d/tools.go"
  local x="-X k8s.io/component-base/version.gitVersion=$SCHEDULER_PLUGINS_VERSION"
  log "building scheduler-plugins $SCHEDULER_PLUGINS_VERSION kube-scheduler and controller (cold: about 8 minutes on 2 cores)"
  mkdir -p "$SCHEDULER_PLUGINS_BIN"
  (cd "$d" && { grep -q "$m $SCHEDULER_PLUGINS_VERSION" go.mod || go get "$m@$SCHEDULER_PLUGINS_VERSION"; } && go mod tidy &&
    go build -trimpath -ldflags "$x" -o "$SCHEDULER_PLUGINS_BIN/kube-scheduler.tmp" "$m/cmd/scheduler" &&
    go build -trimpath -ldflags "$x" -o "$SCHEDULER_PLUGINS_BIN/controller.tmp" "$m/cmd/controller")
  mv "$SCHEDULER_PLUGINS_BIN/kube-scheduler.tmp" "$SCHEDULER_PLUGINS_BIN/kube-scheduler"
  mv "$SCHEDULER_PLUGINS_BIN/controller.tmp" "$SCHEDULER_PLUGINS_BIN/controller"
  # Its CRDs (PodGroup, and ElasticQuota, which the controller also watches), as the module ships them.
  mkdir -p "$SCHEDULER_PLUGINS_BIN/crd"
  cp "$(cd "$d" && go list -m -f '{{.Dir}}' "$m")"/config/crd/bases/*.yaml "$SCHEDULER_PLUGINS_BIN/crd/"
  chmod u+w "$SCHEDULER_PLUGINS_BIN"/crd/*.yaml
  log "scheduler-plugins $SCHEDULER_PLUGINS_VERSION built in $((SECONDS - t))s"
}

# Kueue's manager, from a wrapper module like etcd's. Note: `go install ...@version` would also
# ask the proxy for the module's version list (to report a deprecation), which it refuses.
build_kueue() {
  if [ -x "$KUEUE_BIN/kueue" ] && [ -f "$KUEUE_BIN/webhook/manifests.yaml" ]; then log "kueue $KUEUE_VERSION found in cache"; return; fi
  local d=$TRAINYARD_CACHE/src/kueue-$KUEUE_VERSION t=$SECONDS src
  src=$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  # Its CRDs and webhook manifest come from the same module, beside the binary.
  mkdir -p "$KUEUE_BIN/crd" "$KUEUE_BIN/webhook"
  install -m 0644 "$src"/config/components/crd/bases/*.yaml "$KUEUE_BIN/crd/"
  install -m 0644 "$src/config/components/webhook/manifests.yaml" "$KUEUE_BIN/webhook/"
  if [ -x "$KUEUE_BIN/kueue" ]; then return; fi
  wrapper "$d" trainyard.local/kueue
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kueue/cmd/kueue"\n' >"$d/tools.go"
  grep -q "sigs.k8s.io/kueue $KUEUE_VERSION" "$d/go.mod" || printf '\nrequire sigs.k8s.io/kueue %s\n' "$KUEUE_VERSION" >>"$d/go.mod"
  # Kueue's own go.sum vouches for its dependencies: one of them
  # (sigs.k8s.io/scheduler-library v0.1.0-alpha1) is unknown to the checksum database.
  [ -f "$d/go.sum" ] || cp "$src/go.sum" "$d/go.sum"
  log "building kueue $KUEUE_VERSION (cold: about 4 minutes on 2 cores)"
  (cd "$d" && go mod tidy && go build -trimpath -o "$KUEUE_BIN/kueue.tmp" sigs.k8s.io/kueue/cmd/kueue)
  mv "$KUEUE_BIN/kueue.tmp" "$KUEUE_BIN/kueue"
  log "kueue $KUEUE_VERSION built in $((SECONDS - t))s"
}

build_controller_gen() {
  if [ -x "$CONTROLLER_GEN" ]; then return; fi
  local t=$SECONDS
  log "building controller-gen $CONTROLLER_TOOLS_VERSION"
  GOBIN=$(dirname "$CONTROLLER_GEN") go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
  log "controller-gen built in $((SECONDS - t))s"
}

build_helm() {
  if [ -x "$HELM" ]; then return; fi
  local t=$SECONDS major=${HELM_VERSION%%.*}
  log "building helm $HELM_VERSION"
  # Stamped as helm's own Makefile stamps a release, so `helm version` names the pin.
  GOBIN=$(dirname "$HELM") CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$HELM_VERSION -X helm.sh/helm/$major/internal/version.metadata= -X helm.sh/helm/$major/internal/version.gitTreeState=clean" \
    "helm.sh/helm/$major/cmd/helm@$HELM_VERSION"
  log "helm built in $((SECONDS - t))s"
}

build_prometheus() {
  if [ -x "$PROMETHEUS_BIN/prometheus" ] && [ -x "$PROMETHEUS_BIN/promtool" ]; then return; fi
  local t=$SECONDS release src
  src=$(go mod download -json "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  release=$(cat "$src/VERSION")
  log "building prometheus and promtool $release (cold: about 8 minutes on 2 cores)"
  # Without the builtinassets tag the web UI is not in the binary; the tests use the HTTP API only.
  GOBIN=$PROMETHEUS_BIN CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Branch=HEAD" \
    "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
  log "prometheus built in $((SECONDS - t))s"
}

# The previous Kubernetes release, for the e2e suite's second cluster (TestKubernetesGangPreviousRelease).
build_kube_previous() {
  (KUBE_VERSION=$KUBE_PREVIOUS_VERSION && KUBE_BIN=$TRAINYARD_CACHE/kubernetes-$KUBE_VERSION && build_kube)
}

envtest_assets() {
  build_etcd
  build_kube
  mkdir -p "$ENVTEST_ASSETS"
  ln -sf "$ETCD_BIN/etcd" "$ENVTEST_ASSETS/etcd"
  ln -sf "$KUBE_BIN/kube-apiserver" "$ENVTEST_ASSETS/kube-apiserver"
  ln -sf "$KUBE_BIN/kubectl" "$ENVTEST_ASSETS/kubectl"
}

case "${1:-all}" in
  all) build_controller_gen; build_helm; build_kwok; envtest_assets; build_kube_previous; build_scheduler_plugins; build_kueue; build_prometheus ;;
  kube) build_kube ;;
  kube-previous) build_kube_previous ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  scheduler-plugins) build_scheduler_plugins ;;
  kueue) build_kueue ;;
  controller-gen) build_controller_gen ;;
  helm) build_helm ;;
  prometheus) build_prometheus ;;
  envtest) envtest_assets ;;
  *) echo "usage: $0 [all|kube|kube-previous|etcd|kwok|scheduler-plugins|kueue|controller-gen|helm|prometheus|envtest]" >&2; exit 2 ;;
esac
