"""Regression: a put racing with a delete that prunes the same directory must not fail.

Found by the Spark workers on threads: one sink writer staged a file while
another's commit deleted the last staged file and pruned ``_staging/out``;
``mkdir(exist_ok=True)`` saw the directory exist, then gone, and raised
``FileExistsError``.
"""

from __future__ import annotations

import threading

from barrier_runtime.storage.local import LocalObjectStore


def test_puts_survive_concurrent_deletes_that_prune_directories(tmp_path) -> None:
    store = LocalObjectStore(tmp_path)
    errors: list[BaseException] = []
    stop = threading.Event()

    def churn(worker: int) -> None:
        try:
            n = 0
            while not stop.is_set():
                key = f"_staging/out/{worker}-{n}"
                store.put(key, b"x")
                store.delete(key)  # empties the directory and prunes it
                n += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=churn, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    stop.wait(2.0)
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
