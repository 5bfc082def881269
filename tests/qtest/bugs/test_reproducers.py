"""The reproducers on real builds: present where the ledger's versions say
the bug is, absent on a build with our fixes; never a hang, never a QEMU left.

The expected presence comes from the ledger entry (``Versions.applies`` of
the build's version), never from a build's output.  The fixed build is
Debian's 11.1.1 source with ``bugs/*.patch`` applied, built into the cache
by ``sdqtest qemu build 11.1.1 --bugs``; without it that test is skipped and
says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.bugs import run
from harness.bugs.catalog import BUGS, Bug
from harness.bugs.run import BugVerdict
from harness.provision import source
from harness.qemu.builds import QemuBuild
from harness.qemu.selection import select_builds

pytestmark = pytest.mark.qemu

#: A QEMU 11.1.1 built from Debian's source with every bugs/*.patch applied
#: (``$SDQTEST_BUGS_FIXED_QEMU`` names another).
FIXED_BUILD = source.wanted(source.RELEASES["11.1.1"], bugs=True)
FIXED = Path(os.environ.get("SDQTEST_BUGS_FIXED_QEMU", str(FIXED_BUILD.binaries[0])))


def _children() -> set[int]:
    """PIDs of this process's live children (a QEMU left behind would be one)."""
    out = set()
    me = str(os.getpid())
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[-1].split()
            if len(fields) > 1 and fields[1] == me and fields[0] != "Z":
                out.add(int(d))
    return out


@pytest.mark.parametrize("bug", BUGS, ids=lambda b: b.name)
def test_verdict_is_the_ledgers(qemu_build: QemuBuild, bug: Bug) -> None:
    before = _children()
    o = run.run(bug, qemu_build)
    assert _children() <= before, "a QEMU was left running"
    assert o.verdict is not BugVerdict.ERROR, o.detail
    if o.verdict is BugVerdict.UNUSABLE:
        assert bug.reproduce is None or bug.unusable(qemu_build.profile), o.detail
        return
    present = bug.entry.versions.applies(qemu_build.version)
    if o.verdict is BugVerdict.NOT_SHOWN:
        assert not bug.shows_absence
        return
    assert (o.verdict is BugVerdict.PRESENT) == present, (
        f"{bug.key} on {qemu_build.version}: {o.verdict.value}, the ledger says "
        f"{bug.entry.versions.describe()}: {o.detail}")


@pytest.fixture(scope="module")
def fixed_build() -> QemuBuild:
    if not FIXED.is_file():
        pytest.skip(f"no 11.1.1 build with the fixes in harness/bugs/data/: run "
                    f"'{source.command_for('11.1.1', 'bugs')}'")
    return select_builds([str(FIXED)], install_missing=False)[0]


@pytest.mark.parametrize("bug", [b for b in BUGS if b.reproduce], ids=lambda b: b.name)
def test_a_fixed_build_says_absent(fixed_build: QemuBuild, bug: Bug) -> None:
    """With its patch the bug is absent; without one it is there as on 11.1.1."""
    o = run.run(bug, fixed_build)
    assert o.verdict is not BugVerdict.ERROR, o.detail
    if bug.patch is not None:
        assert o.verdict is BugVerdict.ABSENT, o.detail
    elif o.verdict in (BugVerdict.PRESENT, BugVerdict.ABSENT):
        assert (o.verdict is BugVerdict.PRESENT) == bug.entry.versions.applies("11.1.1"), \
            o.detail


def test_a_hung_qemu_is_reported_and_reaped(qemu_build: QemuBuild) -> None:
    """A reproducer whose QEMU stops answering ends in time as an error, and
    leaves no process (``StdioTarget`` waits with a deadline)."""
    import dataclasses

    from harness.bugs.reproducers import BugObservation

    def hang(t: object) -> BugObservation:
        from harness.bugs.stdio_target import StdioTarget

        assert isinstance(t, StdioTarget)
        t.command("clock_step 1")
        os.kill(t._ch.proc.pid, 19)  # SIGSTOP: alive, answering nothing
        t.command("readl 0x0")
        return BugObservation(True, "unreachable")

    bug = dataclasses.replace(BUGS[0], reproduce=hang)
    before = _children()
    o = run.run(bug, qemu_build, timeout=1.0)
    assert o.verdict is BugVerdict.ERROR and "hung" in o.detail
    assert _children() <= before
