"""Where sweep points run: local worker processes, or a Dask distributed cluster.

Both offer ``submit(fn, *args) -> future``, ``as_completed(futures)``, ``close()`` and
``abort()`` (stop at once, for Ctrl-C), so a sweep does not care which it has.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator

from simnet.errors import InputError
from simnet.io.budget import memory_budget

__all__ = ["LocalExecutor", "DaskExecutor"]


PR_SET_PDEATHSIG = 1
"""Linux prctl(2) option: the signal a process gets when its parent dies."""


def _worker_setup(parent: int, memory: int) -> None:
    """Worker initializer: its share of the memory budget (``SIMNET_MEMORY``), and death with
    the sweep process however it dies (SIGKILL and SIGTERM included), so no orphan keeps
    computing or holds a pipe such as ``simnet sweep ... | tee log`` open (Linux only;
    elsewhere workers end with their queue)."""
    os.environ["SIMNET_MEMORY"] = f"{memory} B"
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


class LocalExecutor:
    """Points on local worker processes (``workers`` of them), which share the memory budget
    and die with this process."""

    def __init__(self, workers: int | None = None):
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers or os.cpu_count() or 1
        share = max(memory_budget() // self.workers, 1)  # the workers run at once: each gets its part
        self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_worker_setup,
                                         initargs=(os.getpid(), share))

    def submit(self, fn: Callable, *args):
        return self._pool.submit(fn, *args)

    def as_completed(self, futures: Iterable) -> Iterator:
        from concurrent.futures import as_completed

        return as_completed(list(futures))

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)

    def abort(self) -> None:
        """Stop now (Ctrl-C): kill the workers rather than wait for their points."""
        for process in list(getattr(self._pool, "_processes", {}).values()):
            process.kill()
        self._pool.shutdown(wait=False, cancel_futures=True)


class DaskExecutor:
    """Points on a Dask distributed cluster: ``address`` of a scheduler, or ``local`` for a
    ``LocalCluster`` of ``workers`` processes started here."""

    def __init__(self, address: str, workers: int | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise InputError("--scheduler needs Dask: pip install 'dask[distributed]' (or, in simnet's folder, "
                             "pip install '.[dask]')") from None
        self._cluster = None
        if address == "local":
            self._cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self._client = Client(self._cluster)
        else:
            try:
                self._client = Client(address, timeout="15s")
            except (OSError, ValueError) as exc:  # unreachable, or not an address at all
                raise InputError(f"--scheduler: cannot reach the Dask scheduler at {address!r} ({exc})") from None

    def submit(self, fn: Callable, *args):
        return self._client.submit(fn, *args, pure=False)

    def as_completed(self, futures: Iterable) -> Iterator:
        from distributed import as_completed

        return iter(as_completed(list(futures)))

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    abort = close
