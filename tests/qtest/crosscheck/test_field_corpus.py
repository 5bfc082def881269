"""The field corpus (``tests/qtest/field/``): public hw/sd bug reports'
reproducers, restated in sdqtest's normalised form, replayed on every
installed build.

Each file's header names its source, the date reported, the versions
affected and the fix.  Every fix is in the three Debian builds (upstream
7.2 or earlier, or, for CVE-2024-3447, backported by Debian to 7.2:
``debian/changelog`` of 7.2+dfsg-7+deb12u6), so on a normal build each
replays *clean*: QEMU takes the command line (never refused) and serves
every command.  That most of them are AddressSanitizer findings is why
clean says little on a normal build: see the sanitizer build's column in
the README table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.qemu.builds import QemuBuild
from harness.replay import engine as replay
from harness.replay import field

pytestmark = pytest.mark.qemu

CORPUS = replay.field_corpus()
KEYS = ("field", "title", "source", "reported", "affected", "fix", "report-outcome")


def _header(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^# ([a-z-]+): (.*)$", line)
        if m and m.group(1) in KEYS:
            out[m.group(1)] = m.group(2)
    return out


def test_corpus_holds_fifteen_public_reports_each_with_a_source() -> None:
    assert len(CORPUS) >= 15
    for path in CORPUS:
        h = _header(path)
        assert set(KEYS) <= set(h), f"{path.name}: header lacks {set(KEYS) - set(h)}"
        assert h["field"] == path.stem
        assert re.search(r"https?://|qemu-devel", h["source"]), path.name
        assert re.match(r"20[12]\d-\d\d", h["reported"]), path.name
        f = field.parse(path.read_text())
        assert f.form == "header" and f.argv is not None and f.lines, path.name


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_field_reproducer_replays_clean_on_a_fixed_build(qemu_build: QemuBuild,
                                                         path: Path) -> None:
    machines = {*qemu_build.profile.machine_types, *qemu_build.aliases}
    pl = replay.plan(path, qemu_build.binary, machines)
    res = replay.replay_qemu(qemu_build.binary, pl.trace, pl.machine, argv=pl.argv)
    assert res.verdict == replay.CLEAN, res.summary()
    assert res.answered == len(pl.trace)
    replay.replay_model(res, qemu_build.profile, pl.machine)  # never a traceback
