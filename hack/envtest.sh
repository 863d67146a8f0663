#!/usr/bin/env bash
# Builds the envtest control plane (kube-apiserver and etcd) from the pinned
# tool modules under hack/tools and prints the directory that holds them, for
# KUBEBUILDER_ASSETS. No download site is involved: both come from Go modules.
#
# Binaries are cached outside the repository, keyed by the pinned go.sum files,
# so a second run with the same pins is a no-op.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
k8s_version=v1.37.2
cache_root=${SHARDWISE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shardwise}
key=$(cat "$root/hack/tools/kube-apiserver/go.sum" "$root/hack/tools/etcd/go.sum" "$0" | sha256sum | cut -c1-16)
dir="$cache_root/envtest/$key"

if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
tmp=$(mktemp -d "$dir.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

minor=${k8s_version#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"

echo ">> envtest: building kube-apiserver $k8s_version (first run takes several minutes)" >&2
(cd "$root/hack/tools/kube-apiserver" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
echo ">> envtest: building etcd" >&2
(cd "$root/hack/tools/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)
mv "$tmp/kube-apiserver" "$tmp/etcd" "$dir/"
echo ">> envtest: binaries in $dir" >&2
echo "$dir"
