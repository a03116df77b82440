"""Running an export's unit jobs: in this process, on a local pool of spawned processes, or on any executor.

:func:`run_units` yields one :class:`~vidlabel.export._units.UnitResult` per
job as each finishes (the caller publishes that unit's videos at once). Any
``concurrent.futures.Executor`` runs :func:`~vidlabel.export._units.run_unit`
one task per unit; progress comes from the results, and, on the local pool,
from a queue the workers report to while they write. When a job fails, no
further job starts, those running finish (so no worker still writes once the
store's lock is released), and the first error is raised at the end.

The local pool's workers never outlive the driver: each asks Linux for
SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``) and also watches
the parent pid; Ctrl-C / SIGINT goes to the driver only, which terminates
them. A killed or interrupted export leaves only temporary files, so the
same command resumes it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue as _queue
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Executor, Future, wait
from typing import Any

from vidlabel.export._options import ExportOptions
from vidlabel.export._units import UnitJob, UnitResult, run_unit, set_progress_queue

__all__ = ["UnitsFailed", "progress_bar", "run_units"]

_POLL_SECONDS = 0.2  # how often the driver looks at the progress queue while units run
_WATCH_SECONDS = 1.0  # how often a worker checks that the driver is alive (fallback to PR_SET_PDEATHSIG)
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def progress_bar(show: bool, total: int, desc: str) -> Any:
    """A tqdm bar over ``total`` frames, or None when not shown."""
    if not show:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="frame", smoothing=0.1, disable=None)


class UnitsFailed(Exception):
    """Units of an export run on an executor failed (the others were written): ``failures`` pairs each failed
    job with its error, in the order the errors came back."""

    def __init__(self, failures: list[tuple[UnitJob, BaseException]]) -> None:
        super().__init__(f"{len(failures)} frames unit(s) failed")
        self.failures = failures


def run_units(
    jobs: list[UnitJob], opts: ExportOptions, bar: Any, executor: Executor | None = None
) -> Iterator[UnitResult]:
    """Run ``jobs`` on ``executor`` (one task per unit; a failed unit does not stop the others, see
    :class:`UnitsFailed`), else inline (one worker or one job) or on a local pool of ``opts.workers`` spawned
    processes (the first failure stops starting units)."""
    if executor is not None:
        yield from run_on_executor(executor, jobs, opts, bar, keep_going=True)
        return
    if opts.workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield run_unit(job, opts, on_frame=None if bar is None else bar.update)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("spawn")  # never fork a process holding HDF5 handles and threads
    progress_queue = ctx.Queue() if bar is not None else None
    pool = ProcessPoolExecutor(
        max_workers=min(opts.workers, len(jobs)), mp_context=ctx, initializer=_init_worker,
        initargs=(progress_queue, os.getpid()),
    )  # fmt: skip
    try:
        yield from run_on_executor(pool, jobs, opts, bar, progress_queue)
    except BaseException:
        # Ctrl-C / SIGINT of the driver, or its own failure (a worker's error is raised only once none runs):
        # stop the workers now; their unfinished units have temporary names, so the same command resumes
        _stop_workers(pool)
        raise
    finally:
        # running units finish before returning, so no worker still writes once the lock is released
        pool.shutdown(wait=True, cancel_futures=True)


def _init_worker(progress_queue: Any, driver_pid: int) -> None:
    """A local pool worker: dies with the driver, leaves Ctrl-C to the driver, reports progress to its queue."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver stops the workers when it is interrupted
    _die_with_parent(driver_pid)
    set_progress_queue(progress_queue)


def _die_with_parent(parent_pid: int) -> None:
    """End this process when ``parent_pid`` (its parent) dies, even by SIGKILL: Linux's ``PR_SET_PDEATHSIG``
    where there is one, and a thread watching the parent pid everywhere (also covering a parent that died
    before the ``prctl``)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no libc prctl: the watch below still ends us
            pass
    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="vidlabel-watch-driver", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(_WATCH_SECONDS)
        if os.getppid() != parent_pid:  # re-parented: the driver is gone
            os._exit(1)


def _stop_workers(pool: Any) -> None:
    """Terminate a ProcessPoolExecutor's worker processes (SIGTERM) without waiting for their units."""
    for process in list(getattr(pool, "_processes", {}).values()):
        with contextlib.suppress(OSError, ValueError):
            process.terminate()


def run_on_executor(
    executor: Executor, jobs: list[UnitJob], opts: ExportOptions, bar: Any, progress_queue: Any = None,
    *, keep_going: bool = False,
) -> Iterator[UnitResult]:  # fmt: skip
    """Submit one :func:`run_unit` task per job to ``executor``; yield the results as they come.

    ``progress_queue``, when the workers report to one, receives ``(unit key, frames)`` while they write;
    the rest of each unit's frames are counted when its result arrives. With ``keep_going`` a failed unit
    does not stop the others and :class:`UnitsFailed` is raised at the end; else the first failure cancels
    the units not started and is raised once those running have finished. A caller that stops early
    (an error while publishing) cancels the units not yet started.
    """
    submission = uuid.uuid4().hex  # engines that key tasks by their arguments (Dask) never merge two exports' tasks
    futures: dict[Future[UnitResult], UnitJob] = {
        executor.submit(_run_task, job, opts, submission): job for job in jobs
    }
    reported: dict[str, int] = {}
    finished: set[str] = set()
    pending = set(futures)
    error: BaseException | None = None
    failures: list[tuple[UnitJob, BaseException]] = []
    cancelled_here: set[Future[UnitResult]] = set()
    try:
        while pending:
            done, pending = wait(pending, timeout=_POLL_SECONDS, return_when=FIRST_COMPLETED)
            _drain_progress(progress_queue, bar, reported, finished)
            for fut in done:
                if fut in cancelled_here:
                    continue
                exc = (
                    CancelledError(f"the executor cancelled the task of video {futures[fut].attrs.get('video_id')!r}")
                    if fut.cancelled()
                    else fut.exception()
                )
                if exc is not None:
                    if keep_going:
                        failures.append((futures[fut], exc))
                        if bar is not None:
                            bar.update(futures[fut].frames - reported.pop(futures[fut].key, 0))
                    elif error is None:  # stop starting units; publish those that finish; raise at the end
                        error = exc
                        cancelled_here.update(other for other in pending if other.cancel())  # not those running
                    continue
                result = fut.result()
                finished.add(result.key)
                if bar is not None:
                    bar.update(futures[fut].frames - reported.pop(result.key, 0))
                yield result
    finally:
        for fut in pending:
            fut.cancel()
    if error is not None:
        raise error
    if failures:
        raise UnitsFailed(failures)


def _run_task(job: UnitJob, opts: ExportOptions, submission: str) -> UnitResult:
    """:func:`run_unit` as one export's task (``submission`` makes its arguments, hence an engine's key, its own)."""
    return run_unit(job, opts)


def _drain_progress(progress_queue: Any, bar: Any, reported: dict[str, int], finished: set[str]) -> None:
    """Move the frames the workers reported so far onto the bar (a late report of a finished unit is dropped:
    its result counted all its frames)."""
    if progress_queue is None or bar is None:
        return
    try:
        while True:
            key, n = progress_queue.get_nowait()
            if key in finished:
                continue
            reported[key] = reported.get(key, 0) + n
            bar.update(n)
    except _queue.Empty:
        pass
