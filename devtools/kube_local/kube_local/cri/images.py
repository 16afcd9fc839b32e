"""Images for the node's containerd: the pause image, and images from a Docker engine.

Every pod needs a sandbox image; nothing can be pulled here, so :func:`pause_archive`
makes one: an OCI image archive of one layer holding the ``pause`` binary that
``scripts/kube-build.sh pause`` compiles from the Kubernetes module's own source.
:func:`import_archive` hands an archive (this one, or ``docker save``'s) to containerd's
``k8s.io`` namespace, where the kubelet looks.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     binary = Path(d, "pause")
...     _ = binary.write_bytes(b"\\x7fELF")
...     names = tarfile.open(pause_archive(binary, Path(d, "pause.tar"))).getnames()
>>> sorted(n for n in names if not n.startswith("blobs/sha256/"))
['blobs', 'blobs/sha256', 'index.json', 'oci-layout']
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

from kube_local.cri import configs

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


class ImageImportError(RuntimeError):
    """containerd refused an archive, or ``docker save`` failed."""


def _member(archive: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    archive.addfile(info, io.BytesIO(data))


def _folder(archive: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
    archive.addfile(info)


def _descriptor(media_type: str, data: bytes) -> dict[str, object]:
    return {
        "mediaType": media_type,
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }


def pause_archive(binary: Path, out: Path, name: str = configs.PAUSE_IMAGE) -> Path:
    """Write an OCI archive of the image ``name``: ``/pause`` as its entrypoint."""
    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w", format=tarfile.PAX_FORMAT) as layer:
        _member(layer, "pause", binary.read_bytes(), 0o755)
    layer_bytes = layer_buffer.getvalue()
    layer_digest = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": ["/pause"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": _descriptor(CONFIG, config),
            "layers": [_descriptor(LAYER, layer_bytes)],
        }
    ).encode()
    tag = name.rsplit(":", 1)[1]
    annotations = {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag}
    index = {
        "schemaVersion": 2,
        "manifests": [{**_descriptor(MANIFEST, manifest), "annotations": annotations}],
    }
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
        _member(archive, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _folder(archive, "blobs")
        _folder(archive, "blobs/sha256")
        for blob in (layer_bytes, config, manifest):
            _member(archive, "blobs/sha256/" + hashlib.sha256(blob).hexdigest(), blob)
        _member(archive, "index.json", json.dumps(index).encode())
    return out


def _ctr(socket: Path) -> list[str]:
    return ["ctr", "--address", str(socket), "--namespace", "k8s.io"]


def import_archive(socket: Path, archive: Path) -> None:
    done = subprocess.run(
        [*_ctr(socket), "images", "import", str(archive)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise ImageImportError(f"ctr images import {archive}: {done.stderr.strip()}")


def import_from_docker(socket: Path, images: Sequence[str], docker: str) -> None:
    """``docker save IMAGE... | ctr images import -``: the images a pod names by a local tag
    (``cjob-runtime:dev`` is ``docker.io/library/cjob-runtime:dev`` to both)."""
    save = subprocess.Popen([docker, "save", *images], stdout=subprocess.PIPE)
    assert save.stdout is not None
    done = subprocess.run(
        [*_ctr(socket), "images", "import", "-"],
        stdin=save.stdout,
        capture_output=True,
        text=True,
        check=False,
    )
    save.stdout.close()
    if save.wait() != 0:
        raise ImageImportError(f"docker save {' '.join(images)} failed (exit {save.returncode})")
    if done.returncode != 0:
        raise ImageImportError(f"ctr images import: {done.stderr.strip()}")


def present(socket: Path) -> list[str]:
    done = subprocess.run(
        [*_ctr(socket), "images", "list", "--quiet"], capture_output=True, text=True, check=False
    )
    return done.stdout.split()
