#!/usr/bin/env bash
# Fails when a generated file in the work tree differs from what the generators produce, or when
# Go code is unformatted or go.mod is untidy. The generators run in a scratch copy, so a file
# edited by hand is caught rather than silently regenerated over.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The files git knows or would add: what a fresh clone plus the current edits would hold.
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -C "$scratch" -xf -

echo "verify: regenerating in a scratch copy"
make -C "$scratch" --no-print-directory -s generate manifests >/dev/null
(cd "$scratch" && go mod tidy)
# The image writer is a module of its own (its dependency stays out of the operator's go.mod).
(cd "$scratch/hack/ociimage" && go mod tidy)
# So is the Kubeflow training-operator that make bench-scale --peer measures (make peer).
(cd "$scratch/hack/peer" && go mod tidy)

status=0
for path in apis kustomize charts/trainyard/files go.mod go.sum hack/ociimage/go.mod hack/ociimage/go.sum hack/peer/go.mod hack/peer/go.sum; do
  if ! diff -ruN "$root/$path" "$scratch/$path" >"$scratch.diff" 2>&1; then
    echo "verify: $path differs from what the generators produce (run 'make generate manifests', or 'go mod tidy' in its module's folder):"
    head -40 "$scratch.diff"
    status=1
  fi
done
rm -f "$scratch.diff"

unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
  echo "verify: gofmt would change: $unformatted"
  status=1
fi
[ $status -eq 0 ] && echo "verify: generated files, go.mod and formatting are up to date"
exit $status
