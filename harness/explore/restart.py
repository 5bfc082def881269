"""Reach kind ``restart`` (issue #43): data moving again without a command.

A class is ``("reach", "restart", END, RESIZE, BY)``: a transfer ended
part-way ``END`` (:data:`harness.scenarios.restart.ENDS`: an ADMA Length
Mismatch, a failed ADMA data access, Stop At Block Gap, a DAT line reset),
Block Size then written smaller, the same or larger than it was (or not
written: ``same``), and data started again with no command by ``BY``: a
write of SDMA System Address's top byte (``sysad``, SDHC 2.2.1) or a
Continue Request (``continue``, 2.2.14, after a gap stop only).  The
classes are computed around each operation (:func:`before`, :func:`after`
with the run's :class:`State`); the inputs are the scenario layer's
(:func:`harness.scenarios.restart.all_inputs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.driver.ops import Op
from harness.hwdefs import sdhci as H
from harness.scenarios import restart as R

Feature = tuple[Any, ...]

OPERATION = ("start of 256-byte blocks (ADMA2 with End after 200 bytes, or a data segment "
             "past RAM; PIO) + pio, then blkgap stop or reset DAT; write BLKSIZE+BLKCNT (128, "
             "256, 512 bytes, 2 blocks); write HOSTCTL (SDMA) + SDMASYSAD, or blkgap continue")
_LEN = H.ADMAERR_LENMISMATCH
_SYSAD_TOP = H.SDMASYSAD.offset + 3


@dataclass
class State:
    """The run so far: how the last transfer ended (None: a command since,
    or none ended), Block Size's change since, whether the last ``start``
    pointed an ADMA data segment outside RAM."""

    ended: str | None = None
    resize: str | None = None
    faulting: bool = False


def goal() -> list[Feature]:
    out: list[Feature] = [("reach", "restart", end, size, "sysad")
                          for end in R.ENDS for size in R.RESIZES]
    out += [("reach", "restart", "gap", size, "continue") for size in R.RESIZES]
    return out


def before(model: Any) -> tuple[int, int, int]:
    """Block size, ADMA Length Mismatch and ADMA Error status before an op."""
    s = model.sdhci
    return s.block_size, s.admaerr & _LEN, s.errintsts & H.EIS_ADMAERR


def _covers(op: Op, byte: int) -> bool:
    return op["op"] == "write" and bool(op["off"] <= byte < op["off"] + op["size"])


def _restart_by(op: Op) -> str | None:
    if _covers(op, _SYSAD_TOP):
        return "sysad"
    if op["op"] == "blkgap" and op["value"] & H.BLKGAP_CONTINUE:
        return "continue"
    return None


def _faulting(model: Any, op: Op) -> bool:
    """``op`` (a ``start``) points an absolute ADMA data segment outside RAM."""
    return bool(op.get("abs")) and any(not model.memory.is_ram(a)
                                       for a, _n, _attr in op.get("descs", ()))


def after(pre: tuple[int, int, int], model: Any, op: Op, active: bool,
          stop: str | None, st: State) -> set[Feature]:
    """The classes ``op`` reached; ``active``: a transfer was in progress
    before it; ``stop``: how ``op`` itself stopped one (the ``stop`` kind's
    name), if it did."""
    size, _mismatch, adma_error = pre
    s = model.sdhci
    out: set[Feature] = set()
    by = _restart_by(op)
    if st.ended and by:
        out.add(("reach", "restart", st.ended, st.resize or "same", by))
        st.ended = None
    if op["op"] in ("start", "rw", "adma", "cmd", "init", "setup"):
        st.ended, st.faulting = None, _faulting(model, op) if op["op"] == "start" else False
    if st.ended and _covers(op, H.BLKSIZE.offset):
        now = s.block_size
        st.resize = "smaller" if now < size else "larger" if now > size else "same"
    ended = None
    if s.errintsts & H.EIS_ADMAERR and not adma_error:
        ended = "error" if st.faulting else "mismatch" if s.admaerr & _LEN else None
    elif active and stop in ("gap", "dat-reset"):
        ended = stop
    if ended:
        st.ended, st.resize = ended, None
    return out


def inputs() -> list[list[Op]]:
    """The scenario layer's read inputs, one per way a transfer ends (the
    write ones meet the search's CMD13 probe between the end and the
    restart, where QEMU >= 9.1 aborts on the next data byte: the group
    ``restart`` runs them without probes)."""
    return [R.inputs(end, False) for end in R.ENDS]
