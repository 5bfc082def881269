"""A :class:`~harness.machine.Machine` as a QEMU command line.

The one place where a machine description becomes ``argv``: sessions,
replays and the reproducer scripts people run without sdqtest all use
:func:`qemu_argv`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from harness.machine import CARD_ID, DRIVE_ID, SDHCI_ID, CardImage, Machine, PropValue

_MIB = 1 << 20


def qemu_value(v: PropValue) -> str:
    """A property value as QEMU's option parser reads it."""
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _escape(text: str) -> str:
    """A value inside a QEMU option list: commas are doubled."""
    return text.replace(",", ",,")


def _size(n: int) -> str:
    return f"{n // _MIB}M" if n % _MIB == 0 else str(n)


def drive_arg(image: CardImage, *, snapshot: bool = False) -> str:
    """The ``-drive`` option string of the card's image."""
    if image.path is None:
        assert image.size is not None
        # null-co is 1 GiB unless told (file.size); the format's own size
        # then takes all of it.
        opts = [f"if=none,id={DRIVE_ID},file=null-co://,file.size={_size(image.size)}",
                f"format={image.format},size={_size(image.size)}"]
    else:
        opts = [f"if=none,id={DRIVE_ID},file={_escape(str(image.path))},format={image.format}"]
    if image.readonly:
        opts.append("readonly=on")
    if image.cache is not None:
        opts.append(f"cache={image.cache}")
    elif image.path is not None and image.format != "raw":
        # writethrough: the container's metadata is on disk after every
        # request, so reading the image back sees what the guest wrote.
        opts.append("cache=writethrough")
    if snapshot:
        opts.append("snapshot=on")
    return ",".join(opts)


def board_device_args(machine: Machine, *, snapshot: bool = False) -> list[str]:
    """A board's own controller and card: the card's image as ``-drive if=sd``
    at the board's index, the card's properties as ``-global sd-card.*`` (or
    ``emmc.*``: the board creates the card; its controller properties are the
    board's)."""
    b = machine.board_def
    assert b is not None
    out: list[str] = []
    if machine.image is not None:
        drive = drive_arg(machine.image, snapshot=snapshot)
        out += ["-drive", drive.replace("if=none,", f"if=sd,index={b.card_index},", 1)]
    for k, v in machine.card_props.items():
        out += ["-global", f"{b.card_kind}.{k}={_escape(qemu_value(v))}"]
    return out


def device_args(machine: Machine, *, snapshot: bool = False) -> list[str]:
    """``-drive``/``-device`` options of the controller, the card and its image."""
    if machine.board is not None:
        return board_device_args(machine, snapshot=snapshot)
    out: list[str] = []
    if machine.image is not None:
        out += ["-drive", drive_arg(machine.image, snapshot=snapshot)]
    if machine.sdhci is not None:
        host = [f"{k}={_escape(qemu_value(v))}" for k, v in machine.sdhci.items()]
        out += ["-device", ",".join(["sdhci-pci", f"id={SDHCI_ID}", *host])]
    if machine.card is not None:
        card = [f"{k}={_escape(qemu_value(v))}" for k, v in machine.card.items()]
        if machine.image is not None:
            card.insert(0, f"drive={DRIVE_ID}")
        out += ["-device", ",".join([machine.card_kind, f"id={CARD_ID}", *card])]
    return out


#: ``-seed``: the seed of QEMU's guest-visible randomness
#: (``qemu_guest_getrandom``), fixed so that every launch draws the same
#: values; sd.c's RCA is one since 9.1 (CMD3 SEND_RELATIVE_ADDR), and a
#: reproducer's trace, whose commands carry it, replays only on a QEMU
#: that draws it again.
SEED = 1


def qemu_argv(
    binary: str | os.PathLike[str],
    machine: Machine,
    *,
    accel: str = "qtest",
    qtest: str = "stdio",
    qtest_log: str | None = None,
    qmp: Path | None = None,
    snapshot: bool = False,
    devices: Sequence[str] | None = None,
    incoming: str | None = None,
) -> list[str]:
    """The command line that builds ``machine`` under qtest.

    ``accel`` is ``qtest`` or ``tcg`` (``-S``: registers and memory work,
    virtual time does not move).  ``qtest`` is the qtest chardev (``stdio``
    or ``unix:PATH``), ``qmp`` a unix socket for a QMP monitor.
    ``snapshot`` opens the card image with ``snapshot=on`` so QEMU never
    writes it.  ``devices`` replaces the machine's own device options.
    ``incoming`` (a migration URI, e.g. ``exec:cat FILE``) makes QEMU wait
    for a migration stream instead of starting the machine afresh.
    """
    if accel not in ("qtest", "tcg"):
        raise ValueError(f"accel must be qtest or tcg, not {accel!r}")
    board = machine.board_def
    argv = [
        os.fspath(binary),
        "-machine", machine.type,
        *(["-accel", "qtest"] if accel == "qtest" else ["-accel", "tcg", "-S"]),
        *(["-nodefaults"] if board is None or board.nodefaults else []),
        "-display", "none",
        "-m", _size(machine.ram),
        "-seed", str(SEED),
        "-qtest", qtest,
    ]
    if board is not None:
        argv += list(board.args)
    if qtest_log is not None:
        argv += ["-qtest-log", qtest_log]
    if qmp is not None:
        argv += ["-chardev", f"socket,path={qmp},id=qmp", "-mon", "chardev=qmp,mode=control"]
    argv += list(devices) if devices is not None else device_args(machine, snapshot=snapshot)
    if incoming is not None:
        argv += ["-incoming", incoming]
    return argv


def replay_argv(binary: str | os.PathLike[str], machine: Machine, *,
                accel: str = "qtest") -> list[str]:
    """The command line that replays a qtest trace of ``machine`` from
    stdin (``-qtest stdio``), a PC's or a board's alike, its card image
    (the original file, never a private copy) opened ``snapshot=on``."""
    return qemu_argv(binary, machine, accel=accel, qtest="stdio", snapshot=True)


def replay_script(argv: Sequence[str], trace: str, comment: Sequence[str], *,
                  seconds: int = 3) -> str:
    """A ``sh`` script that feeds the qtest trace file ``trace`` (a shell
    word: quoted, or ``"$(dirname "$0")/..."``) to QEMU's ``argv``
    (:func:`replay_argv`), for people without sdqtest; ``comment``: its
    first lines.  QEMU does not exit at the end of its qtest input, so it is
    stopped after ``$REPLAY_SECONDS`` (default ``seconds``); the trace's
    ``#`` header lines (the machine, for ``sdqtest replay``) are left out."""
    if not argv:
        raise ValueError("a replay script needs QEMU's command line")
    return ("#!/bin/sh\n" + "".join(f"# {line}\n" for line in comment)
            + "# QEMU does not exit at the end of its qtest input: it is stopped after\n"
            f"# REPLAY_SECONDS (default {seconds}).  The trace's '#' header lines (the\n"
            "# machine, for 'sdqtest replay') are left out; $QEMU overrides the binary.\n"
            f"grep -v '^#' {trace} | "
            f"exec timeout -k 1 \"${{REPLAY_SECONDS:-{seconds}}}\" {shell_line(argv)}\n")


def shell_line(argv: Sequence[str], *, binary_var: str | None = "QEMU") -> str:
    """``argv`` quoted for ``sh``; the binary overridable by ``$QEMU``."""
    if not argv:
        raise ValueError("no command line to quote")
    head = shlex.quote(argv[0])
    if binary_var:
        head = f'"${{{binary_var}:-{argv[0]}}}"'
    return " ".join([head, *(shlex.quote(a) for a in argv[1:])])
