#!/usr/bin/env bash
# Installs what `make test-torch` needs from Debian's packages:
# - python3-torch (PyTorch 1.13 with gloo, for /usr/bin/python3) and iproute2 (network namespaces);
# - a root of Debian $TORCH_ROOT_SUITE with its python3-torch (PyTorch 2.x, Python 3.13), built once
#   by debootstrap into $TORCH_ROOT (the per-user cache): Debian 12 cannot install that torch
#   beside its own Python, so the test runs it chrooted.
# Without root or apt-get it says so and installs nothing; the test layer then skips, or fails
# where TRAINYARD_REQUIRE_TORCH=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/versions.sh

need=()
[ -x /usr/bin/torchrun ] || need+=(python3-torch)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ -x "$TORCH_ROOT/usr/bin/torchrun" ] || command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "test-torch: cannot install ${need[*]} here (needs root and apt-get)"
    exit 0
  fi
  echo "test-torch: installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  # Note: a fresh machine may have no package lists yet; update only when the install needs it.
  apt-get install -y -q --no-install-recommends "${need[@]}" ||
    { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"; }
fi

[ -x "$TORCH_ROOT/usr/bin/torchrun" ] && exit 0
[ "$(id -u)" = 0 ] || { echo "test-torch: cannot build $TORCH_ROOT here (debootstrap needs root)"; exit 0; }
t=$SECONDS
partial=$TORCH_ROOT.partial
# Note: debootstrap mounts /proc and /sys inside the root while it installs; run in a mount
# namespace of its own, a killed build leaves no mount behind, and the partial root is only files.
rm -rf --one-file-system "$partial"
# Note: on a fresh machine the per-user cache may not exist yet (nothing else has run).
mkdir -p "$(dirname "$TORCH_ROOT")"
echo "test-torch: building a Debian $TORCH_ROOT_SUITE root with python3-torch in $TORCH_ROOT (about 1.5 GB on disk, from $TORCH_ROOT_MIRROR)"
unshare --mount --propagation private -- \
  debootstrap --variant=minbase --include=python3-torch "$TORCH_ROOT_SUITE" "$partial" "$TORCH_ROOT_MIRROR" \
  >"$partial.log" 2>&1 || { tail -n 20 "$partial.log"; echo "test-torch: debootstrap failed, its log: $partial.log"; exit 1; }
# The mount points the test binds a pod's files on (hack/torchtest/runtime_test.go).
mkdir -p "$partial/trainyard"
touch "$partial/etc/hosts" "$partial/etc/resolv.conf"
# The downloaded packages are installed; only the root is kept.
rm -rf "$partial/var/cache/apt/archives/"*.deb
mv "$partial" "$TORCH_ROOT"
rm -f "$partial.log"
echo "test-torch: $TORCH_ROOT built in $((SECONDS - t))s ($(du -sxh "$TORCH_ROOT" | cut -f1))"
