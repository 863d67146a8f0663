#!/usr/bin/env bash
# Fails when git tracks a file over 1 MiB that hack/large-files.txt does not
# list: build outputs and data dumps do not belong in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
allowed=$(grep -v -e '^#' -e '^$' hack/large-files.txt || true)
bad=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue
  size=$(stat -c %s "$f")
  (( size > limit )) || continue
  if ! grep -qxF -- "$f" <<<"$allowed"; then
    echo "check-large-files: $f is $((size / 1024)) KiB, over 1 MiB and not listed in hack/large-files.txt" >&2
    bad=1
  fi
done < <(git ls-files -z)
exit $bad
