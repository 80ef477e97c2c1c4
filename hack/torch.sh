#!/usr/bin/env bash
# Installs what `make test-torch` needs from Debian's packages: python3-torch (PyTorch 1.13 with
# gloo, for /usr/bin/python3) and iproute2 (network namespaces). Without root or apt-get it says
# so and installs nothing; the test layer then skips, or fails where TRAINYARD_REQUIRE_TORCH=1.
set -euo pipefail
need=()
[ -x /usr/bin/torchrun ] || need+=(python3-torch)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ ${#need[@]} -gt 0 ] || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "test-torch: cannot install ${need[*]} here (needs root and apt-get)"
  exit 0
fi
echo "test-torch: installing ${need[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
# Note: a fresh machine may have no package lists yet; update only when the install needs it.
apt-get install -y -q --no-install-recommends "${need[@]}" ||
  { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"; }
