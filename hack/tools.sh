#!/usr/bin/env bash
# Builds the pinned control plane and code generators into the version-keyed cache
# (hack/versions.sh), from the Go module proxy only. Whatever is already there is kept.
#
#   hack/tools.sh [all|kube|etcd|kwok|controller-gen|helm|envtest]
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

envtest_assets() {
  build_etcd
  build_kube
  mkdir -p "$ENVTEST_ASSETS"
  ln -sf "$ETCD_BIN/etcd" "$ENVTEST_ASSETS/etcd"
  ln -sf "$KUBE_BIN/kube-apiserver" "$ENVTEST_ASSETS/kube-apiserver"
  ln -sf "$KUBE_BIN/kubectl" "$ENVTEST_ASSETS/kubectl"
}

case "${1:-all}" in
  all) build_controller_gen; build_helm; build_kwok; envtest_assets ;;
  kube) build_kube ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  controller-gen) build_controller_gen ;;
  helm) build_helm ;;
  envtest) envtest_assets ;;
  *) echo "usage: $0 [all|kube|etcd|kwok|controller-gen|helm|envtest]" >&2; exit 2 ;;
esac
