#!/usr/bin/env bash
# Builds the real Kubernetes components of the local control plane from their official Go
# modules, once per machine, into a cache outside the clone; prints the bin directory.
#
#   scripts/kube-build.sh [COMPONENT...]     default: all of them
#
# Components: etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
# (default); kube-proxy, coredns and pause (the node's Service proxy, cluster DNS and pod
# sandbox process; pause is C, compiled by gcc from the Kubernetes module) on request.
# The build modules are devtools/kube_build/{etcd,kubernetes,coredns}/go.mod (k8s.io/kubernetes at one
# release, its k8s.io/* staging modules pinned to the matching v0.x by replace lines). The
# cache key is the release plus a digest of both modules and the Go version, so an edit of
# go.mod or a new Go builds anew and an unchanged machine reuses what it built:
#   ${CJOB_CACHE:-~/.cache/cjob}/kubernetes/<release>-<digest>/bin/
# Binaries carry their release in /version (the ldflags Kubernetes' own build sets).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
k8s_mod=devtools/kube_build/kubernetes
etcd_mod=devtools/kube_build/etcd
dns_mod=devtools/kube_build/coredns

# shellcheck source=scripts/lib/go-toolchain.sh
. scripts/lib/go-toolchain.sh
ensure_go
release=$(cd "$k8s_mod" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_release=$(cd "$etcd_mod" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
dns_release=$(cd "$dns_mod" && go list -m -f '{{.Version}}' github.com/coredns/coredns)
digest=$( { cat "$k8s_mod/go.mod" "$k8s_mod/go.sum" "$etcd_mod/go.mod" "$etcd_mod/go.sum" \
    "$dns_mod/go.mod" "$dns_mod/go.sum"; go env GOVERSION; } \
    | sha256sum | cut -c1-12)
cache=${CJOB_CACHE:-$HOME/.cache/cjob}/kubernetes/$release-$digest
bin=$cache/bin
mkdir -p "$bin"
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)

# One build at a time per cache (tests in parallel, a script and a test).
exec 9>"$cache/.lock"
flock 9

major=${release#v}; major=${major%%.*}
minor=${release#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$release -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

for c in "${components[@]}"; do
    [ -x "$bin/$c" ] && continue
    start=$SECONDS
    case "$c" in
        etcd)
            (cd "$root/$etcd_mod" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" \
                go.etcd.io/etcd/server/v3) ;;
        coredns)
            (cd "$root/$dns_mod" && go build -trimpath -ldflags "-s -w" -o "$bin/coredns.tmp" \
                github.com/coredns/coredns) ;;
        pause) # the pod sandbox's process, from the Kubernetes module's own source
            src=$(cd "$root/$k8s_mod" && go mod download -json k8s.io/kubernetes |
                sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
            gcc -Os -static -Wall -Werror -DVERSION="$release" -o "$bin/pause.tmp" \
                "$src/build/pause/linux/pause.c" ;;
        kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kubectl | kube-proxy)
            (cd "$root/$k8s_mod" && go build -trimpath -ldflags "$ldflags" \
                -o "$bin/$c.tmp" "k8s.io/kubernetes/cmd/$c") ;;
        *) echo "kube-build: unknown component $c" >&2; exit 2 ;;
    esac
    mv "$bin/$c.tmp" "$bin/$c"
    case "$c" in etcd) v=$etcd_release ;; coredns) v=$dns_release ;; *) v=$release ;; esac
    echo "kube-build: built $c ($v) in $((SECONDS - start)) s" >&2
done
echo "$bin"
