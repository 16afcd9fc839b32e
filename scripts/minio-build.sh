#!/usr/bin/env bash
# Builds the MinIO server from its official Go module, once per machine, into a cache outside
# the clone; prints the path of the binary.
#
#   scripts/minio-build.sh
#
# MinIO distributes its community server as source. The build module
# devtools/minio_build/go.mod pins github.com/minio/minio to one release (a pseudo-version:
# MinIO tags RELEASE.<date>, which the Go module proxy serves as v0.0.0-<date>-<commit>); its
# go.sum pins every dependency. The cache key is that release plus a digest of the module and
# the Go version, so an edit of go.mod or a new Go builds anew and an unchanged machine
# reuses what it built:
#   ${CJOB_CACHE:-~/.cache/cjob}/minio/<release>-<digest>/bin/minio
# The binary reports its release as MinIO's own build would (`minio --version`, the
# `Server` version of the admin API and the metrics), through the ldflags MinIO sets.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=devtools/minio_build

# shellcheck source=scripts/lib/go-toolchain.sh
. scripts/lib/go-toolchain.sh
ensure_go
pseudo=$(cd "$mod" && go list -m -f '{{.Version}}' github.com/minio/minio)
digest=$( { cat "$mod/go.mod" "$mod/go.sum"; go env GOVERSION; } | sha256sum | cut -c1-12)
cache=${CJOB_CACHE:-$HOME/.cache/cjob}/minio/$pseudo-$digest
bin=$cache/bin
mkdir -p "$bin"

# One build at a time per cache (a script and a test, or two tests).
exec 9>"$cache/.lock"
flock 9

if [ ! -x "$bin/minio" ]; then
    start=$SECONDS
    # v0.0.0-20260212201848-7aac2a2c5b7c -> 2026-02-12T20:18:48Z, RELEASE.2026-02-12T20-18-48Z
    stamp=$(echo "$pseudo" | cut -d- -f2)
    commit=$(echo "$pseudo" | cut -d- -f3)
    iso="${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:8:2}:${stamp:10:2}:${stamp:12:2}Z"
    tag="RELEASE.${iso//:/-}"
    pkg=github.com/minio/minio/cmd
    ldflags="-s -w -X $pkg.Version=$iso -X $pkg.CopyrightYear=${stamp:0:4}"
    ldflags+=" -X $pkg.ReleaseTag=$tag -X $pkg.CommitID=$commit -X $pkg.ShortCommitID=$commit"
    ldflags+=" -X $pkg.GOPATH= -X $pkg.GOROOT="
    (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin/minio.tmp" \
        github.com/minio/minio)
    mv "$bin/minio.tmp" "$bin/minio"
    echo "minio-build: built minio $tag in $((SECONDS - start)) s" >&2
fi
echo "$bin/minio"
