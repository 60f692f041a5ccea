#!/usr/bin/env bash
# Builds, once per machine, a real Kubernetes control plane from its Go modules into the
# peers cache, for testing headroom's Kubernetes path (issue 13) on one offline machine:
#
#   bash scripts/kube-control-plane.sh     # builds what is missing, prints where
#
# Result: $HEADROOM_PEERS/kube-$KUBE_VERSION/{kube-apiserver,kube-controller-manager,
# kube-scheduler,etcd}. Debian has no kube-apiserver (and its etcd is too old), and no
# images can be pulled here, so the binaries are built from source through the Go module
# proxy: a throwaway module requires k8s.io/kubernetes and replaces each of its staging
# modules (its own go.mod points them at ./staging, which a module dependency does not
# have) with the matching published v0.x version; etcd comes from the same module graph.
# Cold cost: about 7 minutes of two cores (800 s of CPU with the modules already
# downloaded; 975 s with inlining) and 4-5 GB of Go caches. scripts/peers.sh runs it
# (`peer_kube`).
set -euo pipefail

PEERS="${HEADROOM_PEERS:-$HOME/.cache/headroom/peers}"
# No inlining (why: scripts/peers.sh, which sets it).
GCFLAGS="${HEADROOM_GO_GCFLAGS:-all=-l}"
KUBE_VERSION=v1.36.3
STAGING_VERSION=v0.36.3
dir="$PEERS/kube-$KUBE_VERSION"
bins=(kube-apiserver kube-controller-manager kube-scheduler etcd)

done_already=1
for b in "${bins[@]}"; do [ -x "$dir/$b" ] || done_already=0; done
if [ "$done_already" = 1 ]; then
    echo "kubernetes control plane ready in $dir"
    exit 0
fi
command -v go >/dev/null || { echo "scripts/kube-control-plane.sh: go is needed" >&2; exit 1; }
mkdir -p "$dir/build"
cd "$dir/build"
[ -f go.mod ] || go mod init headroom-kube-control-plane >/dev/null 2>&1
go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
modfile="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$KUBE_VERSION.mod"
[ -f "$modfile" ] || go mod download "k8s.io/kubernetes@$KUBE_VERSION"
# Every `k8s.io/x => ./staging/src/k8s.io/x` of kubernetes' go.mod, to its published version.
for module in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$modfile"); do
    go mod edit -replace="$module=$module@$STAGING_VERSION"
done
cat >tools.go <<'GO'
//go:build tools

// The control plane's commands, so that `go mod tidy` keeps their dependencies.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
go mod tidy
# One `go build` of the three Kubernetes commands: their shared packages are compiled
# once and the three links run side by side. `-s -w`: no symbol table or DWARF, which
# the tests never read and which are a large part of each link's time.
go build -gcflags="$GCFLAGS" -ldflags='-s -w' -o "$dir/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler
go build -gcflags="$GCFLAGS" -ldflags='-s -w' -o "$dir/etcd" go.etcd.io/etcd/server/v3
echo "kubernetes control plane ready in $dir"
