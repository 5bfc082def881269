"""Run a bug's reproducer on a build: present, absent, or why it cannot say.

A fresh QEMU per bug and build, on pipes (:class:`StdioTarget`) or, for a
migration, a :class:`~harness.qemu.target.QemuTarget` with QMP; both wait
with deadlines and reap their processes, so a run never hangs and leaves
no QEMU behind.  The expected verdict is the ledger's
(``Versions.applies`` of the build's version), never the build's output.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from harness.bugs.catalog import Bug
from harness.bugs.stdio_target import StdioTarget
from harness.driver.results import DriverError
from harness.errors import QemuError, QemuGone
from harness.qemu.builds import QemuBuild
from harness.qemu.session import find_assertion


class BugVerdict(enum.StrEnum):
    PRESENT = "present"
    ABSENT = "absent"
    #: The symptom did not show, which proves nothing (uninitialised data).
    NOT_SHOWN = "not shown"
    #: The build cannot run the reproducer (no eMMC, no UHS property, ...).
    UNUSABLE = "n/a"
    #: QEMU or the driver failed otherwise: the reproducer cannot judge.
    ERROR = "error"


@dataclass(frozen=True)
class BugOutcome:
    bug: Bug
    build: str
    version: str
    verdict: BugVerdict
    detail: str
    seconds: float = 0.0
    #: The qtest lines sent (a pipe run only): with the machine, a replayable trace.
    trace: tuple[str, ...] = ()

    @property
    def expected(self) -> bool:
        """Whether the ledger says this version has the bug."""
        return self.bug.entry.versions.applies(self.version)

    @property
    def agrees(self) -> bool | None:
        """Verdict and ledger agree (None: the verdict says nothing)."""
        if self.verdict is BugVerdict.PRESENT:
            return self.expected
        if self.verdict is BugVerdict.ABSENT:
            return not self.expected
        return None


def run(bug: Bug, build: QemuBuild, *, timeout: float = 10.0) -> BugOutcome:
    """Run ``bug``'s reproducer once on a fresh QEMU of ``build``."""
    target: StdioTarget | None = None

    def out(verdict: BugVerdict, detail: str, t0: float = 0.0) -> BugOutcome:
        trace = tuple(target.trace) if isinstance(target, StdioTarget) else ()
        return BugOutcome(bug, build.name, build.version, verdict, detail,
                          time.monotonic() - t0 if t0 else 0.0, trace)

    if bug.reproduce is None:
        return out(BugVerdict.UNUSABLE, bug.note or "no reproducer")
    reason = bug.unusable(build.profile)
    if reason:
        return out(BugVerdict.UNUSABLE, reason)
    t0 = time.monotonic()
    try:
        target = _target(bug, build, timeout)  # noqa: F841 - read by out()
    except QemuError as e:
        return out(BugVerdict.ERROR, f"QEMU did not start: {e}", t0)
    try:
        obs = bug.reproduce(target)
    except QemuGone as e:
        target.close()
        return out(*_gone(bug, target, e), t0)
    except (QemuError, DriverError) as e:
        return out(BugVerdict.ERROR, f"{type(e).__name__}: {e}", t0)
    finally:
        target.close()
    if obs.present:
        return out(BugVerdict.PRESENT, obs.detail, t0)
    return out(BugVerdict.ABSENT if bug.shows_absence else BugVerdict.NOT_SHOWN, obs.detail, t0)


def _target(bug: Bug, build: QemuBuild, timeout: float) -> StdioTarget:
    if bug.qmp:
        from harness.qemu.target import QemuTarget

        return QemuTarget(build.binary, bug.machine(), timeout=timeout)  # type: ignore[return-value]
    return StdioTarget(build.binary, bug.machine(), timeout=timeout)


def _gone(bug: Bug, target: StdioTarget, e: QemuGone) -> tuple[BugVerdict, str]:
    """QEMU went away during the reproducer: the bug itself when it is an
    abort (a signal, an assertion line on stderr), else an error."""
    stderr = getattr(target, "stderr", "")
    status = getattr(target, "status", None)
    assertion = find_assertion(stderr) if isinstance(stderr, str) else None
    signalled = isinstance(status, int) and status < 0
    how = assertion or (f"signal {-status}" if signalled and isinstance(status, int)
                        else f"exit status {status}")
    verdict = BugVerdict.PRESENT if bug.aborts and (assertion or signalled) else BugVerdict.ERROR
    return verdict, f"{e}: {how}"
