"""Scenario runs spread over worker processes, each reusing its QEMUs.

``check -j N`` hands runs to ``N`` forked workers (a Python process each:
the model and the lockstep are Python, so threads would share one core).
Each worker keeps a :class:`harness.qemu.pool.QemuPool` for its life and
closes it when it exits, and is fed the runs of its own chains
(:mod:`harness.check.schedule`: one reuse key each, longest first).
Results come back in the order the runs were given, whatever order they
finish in, so the report is the same for any ``N``.  ``N = 1`` runs in
this process.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import connection
from multiprocessing.util import Finalize
from pathlib import Path
from typing import Any, TypeVar

from harness.check import fixed, runner, schedule, wall
from harness.check.testbench import RunSpec
from harness.model.deviations import Strictness
from harness.qemu.pool import PoolStats, QemuPool
from harness.qemu.qtest import QtestClient

#: One scenario on one build and machine type: the run spec, which carries
#: the scenario object (a forked worker inherits the runs it is given).


@dataclass(frozen=True)
class SharedOptions:
    """What every run of a check shares."""

    strict: Strictness = False
    report_dir: Path | None = None
    image: runner.UserImage | None = None
    reuse: bool = True
    #: ``optimistic`` or ``step`` (:func:`harness.check.runner.run`).
    lockstep: str = runner.OPTIMISTIC
    #: distinct differences a run records (:class:`harness.check.runner.RunOptions`)
    max_differences: int = runner.DEFAULT_MAX_DIFFERENCES


def default_jobs() -> int:
    """One worker per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1


def launch_jobs(jobs: int) -> int:
    """Workers for a phase that launches a QEMU per item and asks it a few
    QMP questions (the compat matrix, the realize cases): such an item waits
    on QEMU's start-up and exit more than it computes, so twice ``jobs``
    keep the cores busy (measured on 2 cores: the realize group on one
    build 9.9 and 8.6 s with 2 workers, 7.5 and 6.6 s with 4, the same CPU)."""
    return 2 * max(jobs, 1)


class Beside:
    """``fn(*args)`` in a forked process of its own, beside the work that
    follows, its answer collected with :meth:`result`: the compat matrix and
    the realize cases run beside the scenario runs, their QEMU launches
    waiting while the scenario workers compute.  The process dies with this
    one (``PR_SET_PDEATHSIG``), and :meth:`cancel` ends it early."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        ctx = multiprocessing.get_context("fork")
        self._recv, send = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(target=_beside, args=(send, fn, args), name="sdqtest-beside")
        # SIGTERM blocked over the fork: a cancel() that comes before the child
        # has set its own disposition waits for it, instead of running this
        # process's handler (a check's, a test runner's) in the child.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            self._proc.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        send.close()

    def result(self) -> Any:
        """``fn``'s answer, or its exception raised here."""
        try:
            beside, ok, value = self._recv.recv()
        except EOFError:
            self._proc.join()
            raise RuntimeError(f"the process beside the check ended with exit code "
                               f"{self._proc.exitcode} and no answer") from None
        finally:
            self._recv.close()
        self._proc.join()
        for name, (secs, launches) in beside.items():
            wall.CLOCK.side(name, secs, launches, wall.CLOCK.beside_jobs)
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        """End the process now: SIGTERM, then SIGKILL if it is still there a
        second later (its QEMUs die with it: their death signal)."""
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(1.0)
            if self._proc.is_alive():
                self._proc.kill()
        self._proc.join()
        self._recv.close()


def _beside(send: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    from harness.qemu.session import set_pdeathsig

    set_pdeathsig()  # the check gone (killed, interrupted): this goes too
    # Stoppable by cancel() whatever the check's process had for SIGTERM
    # (ignored in some job runners, a handler of the test runner's).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked over the fork
    try:
        answer: tuple[Any, ...] = (True, fn(*args))
    except Exception as e:  # noqa: BLE001 - re-raised in the check
        e.add_note(f"in the process beside the check:\n{traceback.format_exc()}")
        answer = (False, e)
    _send_answer(send, (wall.CLOCK.beside, *answer))
    send.close()


def _send_answer(conn: Any, answer: tuple[Any, ...]) -> None:
    """Send ``answer`` (its last two items: ok, value) to the check; one
    that does not pickle goes as not ok, a RuntimeError saying why."""
    try:
        conn.send(answer)
    except Exception as e:  # noqa: BLE001 - an answer that does not pickle
        conn.send((*answer[:-2], False, RuntimeError(f"{type(e).__name__}: {e}")))


_worker: dict[str, object] = {}


def worker_pool(reuse: bool = True) -> QemuPool:
    """This process's pool of reused QEMUs, made on first use and closed as
    a forked worker exits (in the parent: :func:`close_worker_pool`)."""
    pool = _worker.get("pool")
    if not isinstance(pool, QemuPool):
        pool = QemuPool(enabled=reuse)
        _worker["pool"] = pool
        Finalize(pool, pool.close, exitpriority=10)  # runs as the worker exits
    return pool


def close_worker_pool() -> None:
    """Close this process's pool, if it has one."""
    pool = _worker.pop("pool", None)
    if isinstance(pool, QemuPool):
        pool.close()


def _init(opts: SharedOptions, runs: Sequence[RunSpec] = ()) -> None:
    _worker["opts"], _worker["runs"] = opts, runs
    worker_pool(opts.reuse)


def _run_one(r: RunSpec) -> tuple[runner.Result, PoolStats, int]:
    """``r``'s result, what the pool did for it and the qtest commands it sent."""
    pool, opts = _worker["pool"], _worker["opts"]
    assert isinstance(pool, QemuPool) and isinstance(opts, SharedOptions)
    before, sent = pool.stats.copy(), QtestClient.commands_sent
    sc = r.scenario
    if sc.migrates:  # the build migrated to itself: its own processes
        from harness.check import migration

        res = migration.run_check(r.build, sc, r.machine, opts.report_dir)
    else:
        how = runner.RunOptions(strict=opts.strict, report_dir=opts.report_dir,
                                image=opts.image, pool=pool, lockstep=opts.lockstep,
                                max_differences=opts.max_differences)
        if opts.strict is False:  # a build with a fix: its qemu-bug entries are stale
            res = fixed.run(r.build, sc, r.machine, how)
        else:
            res = runner.run(r.build, sc, r.machine, how)
    return res, pool.stats.since(before), QtestClient.commands_sent - sent


def run_all(runs: Sequence[RunSpec], opts: SharedOptions, jobs: int = 1,
            progress: Callable[[int, RunSpec], None] | None = None,
            cost: Sequence[float] | None = None,
            on_result: Callable[[int, runner.Result], None] | None = None
            ) -> tuple[list[runner.Result], PoolStats]:
    """Every run's result, in the order of ``runs``, and what the pools did.

    The runs are done in chains of one reuse key each, longest first
    (:mod:`harness.check.schedule`; ``cost``: each run's expected seconds,
    default the group figures).  ``progress(done, run)`` is called as each
    run finishes, and ``on_result(index, result)`` (the caller keeps what
    finished should an exception stop the rest)."""
    cost = list(cost) if cost is not None else [schedule.estimate(r, {}) for r in runs]
    order = schedule.chains(runs, cost)
    stats = PoolStats()
    out: list[runner.Result | None] = [None] * len(runs)
    done = 0
    t0 = time.monotonic()
    prof = wall.Workers(jobs=1 if jobs <= 1 or len(runs) <= 1 else min(jobs, len(runs)))

    def finished(i: int, res: runner.Result, s: PoolStats, commands: int) -> None:
        nonlocal done
        out[i] = res
        if on_result is not None:
            on_result(i, res)
        stats.add(s)
        prof.add_run(runs[i].scenario.group, runs[i].machine, res.seconds, s, commands)
        done += 1
        if progress:
            progress(done, runs[i])

    if prof.jobs == 1:
        _init(opts)
        try:
            for i in (i for chain in order for i in chain):
                finished(i, *_run_one(runs[i]))
        finally:
            close_worker_pool()
    else:
        last = _serve_all(runs, opts, schedule.Schedule(order, cost, prof.jobs), finished)
        end = time.monotonic()
        prof.idle_end = sum(end - t for t in last)
    prof.elapsed = time.monotonic() - t0
    wall.CLOCK.workers = prof
    return [r for r in out if r is not None], stats


#: Runs handed to a worker ahead of the one it is doing, so that it never
#: waits on this process between two runs.
AHEAD = 2


def _serve_all(runs: Sequence[RunSpec], opts: SharedOptions, plan: schedule.Schedule,
               finished: Callable[[int, runner.Result, PoolStats, int], None]) -> list[float]:
    """The runs on forked workers (one per :attr:`Schedule.own` queue), each
    fed the next run of its own chain as it finishes one; when each worker
    finished its last run."""
    ctx = multiprocessing.get_context("fork")
    conns: list[Any] = []
    procs: list[Any] = []
    last = [time.monotonic()] * len(plan.own)
    try:
        for w in range(len(plan.own)):
            here, there = ctx.Pipe()
            # Forked: the options and runs are inherited, not pickled.
            p = ctx.Process(target=_serve, args=(there, opts, runs), name=f"sdqtest-worker-{w}")
            p.start()
            there.close()
            conns.append(here)
            procs.append(p)
        busy = [_feed(conns[w], procs[w], plan, w, AHEAD) for w in range(len(conns))]
        while any(busy):
            for ready in connection.wait([c for w, c in enumerate(conns) if busy[w]]):
                w = next(w for w, c in enumerate(conns) if c is ready)
                try:
                    i, ok, got = conns[w].recv()
                except (EOFError, OSError):
                    raise _gone(procs[w], w) from None
                if not ok:
                    raise got
                busy[w] += _feed(conns[w], procs[w], plan, w, 1) - 1
                last[w] = time.monotonic()
                finished(i, *got)
        for c in conns:
            c.send(None)
        for p in procs:
            p.join()
        return last
    finally:
        for p in procs:
            _stop(p)
        for c in conns:
            c.close()


def _stop(proc: Any, grace: float = 5.0) -> None:
    """End worker ``proc``: SIGTERM (its QEMUs closed as it exits), then
    SIGKILL after ``grace`` seconds, for a worker whose SIGTERM handler was
    replaced or ignored by the program that forked it (a pytest process
    that ran the CLI in-process); its QEMUs die with it (pdeathsig)."""
    if proc.is_alive():
        proc.terminate()
        proc.join(grace)
        if proc.is_alive():
            proc.kill()
    proc.join()


def _gone(proc: Any, w: int) -> RuntimeError:
    proc.join(5)
    return RuntimeError(f"check worker {w} ended with exit code {proc.exitcode} "
                        "in the middle of its runs")


def _feed(conn: Any, proc: Any, plan: schedule.Schedule, w: int, n: int) -> int:
    """Send worker ``w`` up to ``n`` more runs; how many it got."""
    sent = 0
    while sent < n and (i := plan.next(w)) is not None:
        try:
            conn.send(i)
        except OSError:
            raise _gone(proc, w) from None
        sent += 1
    return sent


def _serve(conn: Any, opts: SharedOptions, runs: Sequence[RunSpec]) -> None:
    """A worker: run each index it is sent, answer ``(index, ok, result)``,
    until it is sent None; its QEMUs closed as it ends."""
    from harness.qemu.session import set_pdeathsig

    set_pdeathsig()  # the check gone (killed outright): its workers go too
    _init(opts, runs)
    try:
        while (i := conn.recv()) is not None:
            try:
                answer: tuple[int, bool, Any] = (i, True, _run_one(runs[i]))
            except Exception as e:  # noqa: BLE001 - raised again in the check
                e.add_note(f"in check worker {os.getpid()}:\n{traceback.format_exc()}")
                answer = (i, False, e)
            _send_answer(conn, answer)
    except EOFError:
        pass  # the check ended
    finally:
        close_worker_pool()


R = TypeVar("R")


def _init_map(fn: Callable[..., Any], items: Sequence[tuple[Any, ...]]) -> None:
    _worker["map"] = (fn, items)


def _call_index(i: int) -> Any:
    """Item ``i`` of those the worker was forked with, through its function
    (only the index and the answer cross the process boundary)."""
    got = _worker["map"]
    assert isinstance(got, tuple)
    fn: Callable[..., Any] = got[0]
    return fn(*got[1][i])


def map_ordered(fn: Callable[..., R], items: Sequence[tuple[Any, ...]], jobs: int = 1,
                progress: Callable[[int, tuple[Any, ...]], None] | None = None) -> list[R]:
    """``[fn(*item) for item in items]`` on ``jobs`` forked workers, in order.

    The workers inherit ``fn`` and the items (scenario objects, builds) as
    they are; only each item's index and its answer are pickled."""
    if jobs <= 1 or len(items) <= 1:
        out: list[R] = []
        for i, it in enumerate(items):
            out.append(fn(*it))
            if progress:
                progress(i + 1, it)
        return out
    got: list[R | None] = [None] * len(items)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_map,
                             initargs=(fn, list(items))) as ex:
        pending = {ex.submit(_call_index, i): i for i in range(len(items))}
        done = 0
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                i = pending.pop(f)
                got[i] = f.result()
                done += 1
                if progress:
                    progress(done, items[i])
    return [g for g in got if g is not None]
