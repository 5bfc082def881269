"""A machine the build cannot start: what it lacks, in QEMU's own words.

A source build without firmware blobs (Debian's ``+ds`` tarballs) has no
``npcm7xx_bootrom.bin``, so every quanta-gbs-bmc run ends before its first
qtest command; a build may lack a machine type or a device a board creates.
Such a run did not test anything: it is ``cannot run on this build``,
reported and counted apart from the runs that failed.  Only QEMU's refusals
below count (QEMU's messages, as its sources print them); any other start-up
failure stays an error, for it may be a regression.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from harness.machine import Machine

__all__ = ["LACKS", "board_refusal", "lacks"]

#: Version of the cached answers' shape.
FORMAT = 1

#: What the build lacks -> QEMU's message for it.
LACKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # hw/arm/npcm7xx_boards.c npcm7xx_load_bootrom (also npcm8xx, vexpress,
    # virt, sbsa-ref): error_report("Could not find ROM image '%s'"), exit(1)
    ("ROM", re.compile(r"Could not find ROM image '[^']*'")),
    # system/vl.c select_machine: "unsupported machine type" (7.2), with the
    # name in quotes since 8.x
    ("machine type", re.compile(r"unsupported machine type(?:: \"[^\"]*\")?")),
    # system/qdev-monitor.c qdev_get_device_class (-device)
    ("device", re.compile(r"'[^']*' is not a valid device model name")),
    # qom/object.c / hw/core/qdev.c qdev_new: a type the board creates is not built in
    ("device", re.compile(r"unknown type '[^']*'")),
)


def lacks(message: str) -> str | None:
    """QEMU's words in ``message`` (a launch failure: QEMU's stderr as the
    session quotes it) when they say the build lacks a ROM, a machine type
    or a device: the message QEMU printed for it, without the warnings
    around it; None for any other failure."""
    for _what, pattern in LACKS:
        m = pattern.search(message)
        if m is not None:
            return m.group(0)
    return None


def board_refusal(binary: str | Path, board: str) -> str | None:
    """Why ``binary`` cannot start board ``board``'s machine (its own
    controller, an empty card slot), in QEMU's words (:func:`lacks`), or
    None when it starts or fails for another reason.  A start is kept in
    the answers cache (:mod:`harness.qemu.answers`), under the firmware
    files beside the binary too (:func:`firmware_digest`); a refusal is
    asked again each time."""
    from harness.qemu import answers
    from harness.qemu.session import QemuError, QemuLaunchError, QemuSession

    def ask() -> str:
        try:
            with QemuSession(binary, Machine.for_board(board), accel="auto", timeout=10):
                return ""
        except QemuLaunchError as e:
            return lacks(str(e)) or ""
        except QemuError:
            return ""

    key = f"{FORMAT}:{board}:{firmware_digest(Path(binary))}"
    got = answers.cached(binary, "board-start", key, ask, keep=lambda a: not a)
    return got or None


def firmware_digest(binary: Path) -> str:
    """A digest of the names of the firmware files QEMU may find beside
    ``binary`` (an installed build's ``qemu-bundle/usr/share/qemu``, a build
    tree's ``pc-bios``, a system install's ``../share/qemu``): the same
    binary with another set of ROMs is asked again."""
    d = binary.parent
    names = sorted(f"{where.name}/{f.name}" for where in (
        d / "qemu-bundle" / "usr" / "share" / "qemu", d / "pc-bios", d.parent / "share" / "qemu")
        if where.is_dir() for f in where.iterdir())
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
