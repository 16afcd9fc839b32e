"""LocalObjectStore specifics: atomic files, invisible temporaries, tidy directories."""

from __future__ import annotations

import os
import pathlib

import pytest

from barrier_runtime.storage import errors, local


@pytest.fixture
def store(tmp_path: pathlib.Path) -> local.LocalObjectStore:
    return local.LocalObjectStore(tmp_path / "root")


def test_root_must_be_absolute() -> None:
    with pytest.raises(errors.InvalidStoreUrlError, match="absolute"):
        local.LocalObjectStore(pathlib.Path("relative"))


def test_objects_are_plain_files_under_the_root(store: local.LocalObjectStore) -> None:
    store.put("job/chk-1/state", b"abc")
    assert (store.root / "job" / "chk-1" / "state").read_bytes() == b"abc"


def test_no_temporary_files_are_left_or_listed(store: local.LocalObjectStore) -> None:
    store.put("d/a", b"1")
    store.put_if_absent("d/b", b"2")
    store.put_if_absent("d/b", b"3")
    assert sorted(os.listdir(store.root / "d")) == ["a", "b"]
    (store.root / "d" / ".c.1234.tmp").write_bytes(b"crashed writer")
    assert list(store.list("d/")) == ["d/a", "d/b"]


def test_delete_prunes_empty_directories_but_not_the_root(store: local.LocalObjectStore) -> None:
    store.put("a/b/c/obj", b"1")
    store.put("a/keep", b"1")
    store.delete("a/b/c/obj")
    assert not (store.root / "a" / "b").exists()
    assert (store.root / "a" / "keep").exists()
    store.delete("a/keep")
    assert store.root.exists() and list(store.root.iterdir()) == []


def test_reads_of_directories_are_not_objects(store: local.LocalObjectStore) -> None:
    store.put("a/b", b"1")
    with pytest.raises(errors.ObjectNotFoundError):
        store.get("a")
    store.delete("a")  # not an object: nothing happens
    assert store.get("a/b") == b"1"


def test_listing_a_missing_root_is_empty(store: local.LocalObjectStore) -> None:
    assert list(store.list("")) == []


def test_temporary_looking_keys_are_refused(store: local.LocalObjectStore) -> None:
    with pytest.raises(ValueError, match="invalid object key"):
        store.put("d/.x.tmp", b"1")


def test_permission_errors_are_access_denied(
    store: local.LocalObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(errors.StorageAccessDeniedError) as failure:
        store.put("k", b"1")
    assert str(failure.value) == (
        f"permission denied to write k in {store.describe()}: check the directory's owner and mode"
    )


def test_without_hard_links_put_if_absent_still_refuses_to_overwrite(
    store: local.LocalObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")  # EPERM: e.g. a FAT or some FUSE mount

    monkeypatch.setattr(os, "link", no_links)
    assert store.put_if_absent("x", b"1") is True
    assert store.put_if_absent("x", b"2") is False
    assert store.get("x") == b"1"
    assert list(store.list("")) == ["x"]
