"""open_object_store: which store a URL opens, with which settings, and clear refusals."""

from __future__ import annotations

import pathlib

import pytest

from barrier_runtime.storage import errors, local, object_store, s3

NO_ENV: dict[str, str] = {}


def test_file_url_opens_a_local_store(tmp_path: pathlib.Path) -> None:
    store = object_store.open_object_store(tmp_path.as_uri(), environ=NO_ENV)
    assert isinstance(store, local.LocalObjectStore)
    assert store.root == tmp_path
    assert store.describe() == tmp_path.as_uri()


def test_plain_path_opens_a_local_store_made_absolute(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = object_store.open_object_store("relative/dir", environ=NO_ENV)
    assert isinstance(store, local.LocalObjectStore)
    assert store.root == tmp_path / "relative" / "dir"


def test_s3_url_with_endpoint_region_and_prefix() -> None:
    store = object_store.open_object_store(
        "s3://ckpts/team/a/?endpoint=http://127.0.0.1:8333&region=eu-west-1",
        access_key="AK",
        secret_key="very-secret",
        environ=NO_ENV,
    )
    assert isinstance(store, s3.S3ObjectStore)
    assert (store.bucket, store.prefix, store.endpoint) == (
        "ckpts",
        "team/a",
        "http://127.0.0.1:8333",
    )
    assert store.describe() == "s3://ckpts/team/a at http://127.0.0.1:8333"
    assert store.url() == "s3://ckpts/team/a?endpoint=http://127.0.0.1:8333"
    assert "very-secret" not in store.describe() + store.url()


def test_s3_endpoint_and_credentials_from_environment() -> None:
    env = {
        "AWS_ENDPOINT_URL": "https://minio.example:9000",
        "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK",
    }
    store = object_store.open_object_store("s3://ckpts", environ=env)
    assert isinstance(store, s3.S3ObjectStore)
    assert store.endpoint == "https://minio.example:9000"
    assert store.describe() == "s3://ckpts at https://minio.example:9000"


def test_s3_without_endpoint_means_aws() -> None:
    store = object_store.open_object_store("s3://ckpts/p", environ=NO_ENV)
    assert store.describe() == "s3://ckpts/p at https://s3.amazonaws.com"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("gs://bucket/x", "unsupported scheme 'gs'"),
        ("s3:///prefix", "names no bucket"),
        ("s3://ckpts/p?endpont=http://x:1", "unknown parameter(s) endpont"),
        ("s3://ckpts/p?endpoint=ftp://x:1", "must look like http://host:port"),
        ("s3://ckpts/p?endpoint=http://x:1/path", "scheme://host[:port] only"),
        ("s3://ckpts/p?endpoint=http://x:1&create_bucket=maybe", "true or false"),
        ("s3://Bad_Bucket/p?endpoint=http://x:1", "not a valid S3 bucket name"),
        ("file://otherhost/x", "file:///absolute/path"),
        ("", "empty"),
    ],
)
def test_bad_urls_are_refused_with_one_sentence(url: str, fragment: str) -> None:
    with pytest.raises(errors.InvalidStoreUrlError) as failure:
        object_store.open_object_store(url, environ=NO_ENV)
    assert fragment in str(failure.value)
    assert "\n" not in str(failure.value)


def test_invalid_store_url_is_also_a_value_error() -> None:
    with pytest.raises(ValueError):
        object_store.open_object_store("gs://x", environ=NO_ENV)


def test_endpoint_credentials_in_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(errors.InvalidStoreUrlError) as failure:
        object_store.open_object_store("s3://ckpts?endpoint=http://user:pw@h:1", environ=NO_ENV)
    assert "pw" not in str(failure.value)
