"""The series' cover letter: what was found, how, and each bug's reproducer."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harness.bugs import qtest_file, seen
from harness.bugs.catalog import Bug
from harness.bugs.triage import Harm

_HOW = """\
These bugs were found by holding QEMU's SD emulation (hw/sd/sd.c, sdhci.c)
to an independent model of the card and the host controller, written from
the SD Physical Layer and Host Controller Simplified Specifications and
JESD84-B51: the same driver operations run on the model and on QEMU under
-accel qtest, in lockstep, and every register read, response, interrupt,
byte of guest memory and card image must agree. Each difference was then
triaged by what it costs a guest; these are the ones a guest or a real
driver pays for (data lost, QEMU aborted, DMA or reads across a boundary,
a driver that stalls). Each patch adds a case to a new qtest,
tests/qtest/sdcard-test.c (patch 1), that fails without its fix."""


def _wrap(text: str, indent: str = "  ") -> list[str]:
    first = "" if text.startswith("* ") else indent
    return textwrap.wrap(text, 72, initial_indent=first, subsequent_indent=indent)


def body(bugs: list[Bug], *, author: str | None, signoff: bool) -> str:
    """The cover letter's text (below the subject)."""
    table = seen.load()
    lines = [_HOW, "", "The bugs, worst first in each class:", ""]
    for b in sorted(bugs, key=lambda b: list(Harm).index(b.severity)):
        c = qtest_file.case(b)
        lines += [*_wrap(f"* {b.title} [{b.severity.value}]", "  "),
                  *_wrap("Evidence: " + b.triage.evidence),
                  *_wrap(f"Reproducer: sdcard-test {', '.join(c.paths)}; outside QEMU's "
                         f"tree, 'sdqtest bugs --qemu BUILD --trace {b.number:04d}' prints "
                         "it as qtest commands that -qtest stdio replays."),
                  *_wrap(seen.since_text(b, table)), ""]
    lines += textwrap.wrap(
        "How the series is checked: 'sdqtest bugs --qemu-src TREE --verify --series DIR' "
        "on Debian's 11.1.1 source builds every case without the fixes (each must fail) "
        "and with them (each must pass, and sdhci-test and fuzz-sdcard-test with it), "
        "then applies these patches one by one, builds and runs the three tests again "
        "(sdqtest's docs/bugs.md has its output).", 72)
    if not (author and signoff):
        lines += ["", *textwrap.wrap(
            "NOTE TO THE SUBMITTER: these patches carry no Signed-off-by and "
            + ("a placeholder author" if not author else "no sign-off") + "; regenerate "
            "them with sdqtest bugs --series DIR --from 'Name <mail>' --signoff (the DCO "
            "is your statement, nobody else can make it).", 72)]
    return "\n".join(lines)


def fill(path: Path, bugs: list[Bug], *, author: str | None, signoff: bool) -> None:
    """Replace format-patch's subject and blurb placeholders in ``path``."""
    text = path.read_text()
    subject = f"hw/sd: fix {len(bugs)} SD/eMMC card and SDHCI bugs, with qtests"
    text = text.replace("*** SUBJECT HERE ***", subject)
    text = text.replace("*** BLURB HERE ***", body(bugs, author=author, signoff=signoff))
    path.write_text(text)
