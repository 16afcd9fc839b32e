#!/usr/bin/env bash
# Builds the MinIO image of the local Kubernetes, cjob-minio:<release>, and prints its tag.
#
#   scripts/minio-image.sh
#
# The binary is scripts/minio-build.sh's (MinIO built from its Go module, cached outside
# the clone); the image is docker/minio.Dockerfile on the registry-free Debian base
# cjob-base:bookworm, built like the project's images (scripts/lib/docker-engine.sh:
# dockerd started when no engine answers, the base made once with debootstrap,
# `docker build --network host`). The build context is a temporary directory holding only
# the binary. The tag is the release the binary reports (`minio --version`), e.g.
# cjob-minio:RELEASE.2026-02-12T20-18-48Z; an image of that tag built from the same binary
# is reused. Like `docker-smoke.sh --build-only` it leaves a dockerd it started running
# (`scripts/docker-smoke.sh --stop-engine` stops it). Load it into the local node with
# `scripts/kube-local.sh load <tag>`; devtools/kube_local/manifests/minio.yaml runs it.
#
# Environment: BASE_IMAGE (a base to use as is), CJOB_DOCKER_WORKDIR (logs, default
# build/docker-smoke), DOCKER (client binary). Progress on stderr, the tag on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

prog=minio-image
# shellcheck source=SCRIPTDIR/lib/report.sh
source scripts/lib/report.sh
# shellcheck source=SCRIPTDIR/lib/docker-engine.sh
source scripts/lib/docker-engine.sh
report_init "${CJOB_DOCKER_WORKDIR:-build/docker-smoke}" "" # the engine's logs go there too
say() { echo "==> $prog: $*" >&2; }

binary=$(bash scripts/minio-build.sh)
# "minio version RELEASE.2026-02-12T20-18-48Z (commit-id=...)"
release=$("$binary" --version | sed -n 's/^minio version \(RELEASE\.[^ ]*\).*/\1/p')
[ -n "$release" ] || die "$binary --version names no RELEASE tag"
image="cjob-minio:$release"
digest=$(sha256sum "$binary" | cut -c1-16)

engine_tools >&2
engine_start >&2
engine_base_image >&2

if [ "$("$DOCKER" image inspect -f '{{index .Config.Labels "io.checkpointed-jobs.binary"}}' \
    "$image" 2>/dev/null || true)" = "$digest" ]; then
    say "$image is up to date"
    echo "$image"
    exit 0
fi
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$binary" "$context/minio"
say "building $image (base $base)"
log="$workdir/build-minio.log"
if ! DOCKER_BUILDKIT=1 "$DOCKER" build --network host --progress=plain \
    --build-arg "BASE_IMAGE=$base" --build-arg "MINIO_RELEASE=$release" \
    --label "io.checkpointed-jobs.binary=$digest" \
    -f docker/minio.Dockerfile --tag "$image" "$context" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    die "docker build of $image failed; the log is $log"
fi
"$DOCKER" image prune --force --filter label=io.checkpointed-jobs.target=minio >/dev/null || true
echo "$image"
