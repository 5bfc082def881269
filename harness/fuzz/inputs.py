"""Field reproducers as fuzz inputs.

A qtest trace (ours, a ``-qtest stdio`` trace with a header of QEMU
arguments, or a bug report's ``cat << EOF | qemu-system-x86_64 ...`` shell
form) is replayed once on QEMU to learn where it maps sdhci-pci's BAR, and
its controller-level operations become fuzz operations: register accesses
at BAR offsets, guest memory writes, clock steps.  The fuzzer then runs and
mutates them on its own machine, like any input of the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.fuzz.ops import DMA_BASE, Op
from harness.profile import BuildProfile
from harness.replay import engine as replay


class _Recorder:
    """Stands in for the model in :func:`replay.replay_model`: records the
    operations it is given as fuzz operations."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def write(self, offset: int, size: int, value: int) -> None:
        self.ops.append({"op": "write", "off": offset, "size": size, "value": value})

    def read(self, offset: int, size: int) -> int:
        self.ops.append({"op": "read", "off": offset, "size": size})
        return 0

    def mem_write(self, addr: int, data: bytes) -> None:
        self.ops.append({"op": "mem", "off": addr - DMA_BASE, "data": data.hex()})

    def mem_read(self, addr: int, length: int) -> bytes:
        return b""

    def clock_step(self, ns: int | None = None) -> int:
        self.ops.append({"op": "clock", "ns": ns})
        return 0

    def close(self) -> None:
        pass


def trace_ops(path: Path, binary: str | Path, profile: BuildProfile,
              timeout: float = 10.0, *, as_is: bool = False,
              notes: list[str] | None = None) -> list[Op]:
    """The fuzz operations of the trace at ``path`` (replayed once on
    ``binary``).  The field forms are normalised as ``sdqtest replay`` does
    (:func:`replay.plan`); each rewrite is appended to ``notes``.  A trace
    QEMU refuses or crashes on raises :class:`replay.ReplayError`."""
    pl = replay.plan(Path(path), Path(binary), profile.machine_types, as_is=as_is)
    if notes is not None:
        notes.extend(pl.notes)
    res = replay.replay_qemu(Path(binary), pl.trace, pl.machine, timeout=timeout, argv=pl.argv)
    if res.verdict == replay.REFUSED:
        raise replay.ReplayError(f"{path}: QEMU {res.summary()}")
    rec = _Recorder()
    replay.replay_model(res, profile, pl.machine, model=rec)
    out: list[Any] = rec.ops
    return out
