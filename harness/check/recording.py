"""QEMU's side of a lockstep run, recorded once and replayed to the model.

QEMU's answers do not depend on the model's mode, so a strict check runs
each scenario on QEMU once, through :class:`RecordingSide`, and then runs
every strict variant of the model against :class:`ReplayTarget`, which
answers from the :class:`Recording`.  The replay expects the very calls that
were recorded, in order; a call that departs from them (the driver took
another path) raises :class:`Departed`, which the lockstep reports as the
divergence at that step.  Card image reads off the recorded path are
answered from a copy of QEMU's final image.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import TargetError
from harness.machine import Machine
from harness.qemu.target import QemuTarget, copy_image, read_container


class Departed(TargetError):
    """The replayed run asked QEMU for something the recording does not hold next."""


@dataclass
class Call:
    """One call on QEMU's target: what was asked, the answer, and how long
    QEMU's qtest trace was after it."""

    method: str
    args: tuple[Any, ...]
    answer: Any
    trace_len: int


@dataclass
class Recording:
    """Every call a run made on QEMU's target, in order, and what a
    reproducer needs: the machine, the qtest trace, the final card image."""

    machine: Machine | None = None
    calls: list[Call] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    replay_argv: list[str] = field(default_factory=list)
    image: Path | None = None
    image_format: str = "raw"
    _dir: tempfile.TemporaryDirectory[str] | None = None

    def cleanup(self) -> None:
        """Remove the copy of QEMU's card image."""
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
            self.image = None


class _CallTarget:
    """The Target calls, each routed through :meth:`_call` (method name and
    arguments): recording and replay differ only there."""

    def _call(self, method: str, *args: Any) -> Any:
        raise NotImplementedError

    def read(self, offset: int, size: int) -> int:
        return int(self._call("read", offset, size))

    def write(self, offset: int, size: int, value: int) -> None:
        self._call("write", offset, size, value)

    def mem_read(self, addr: int, length: int) -> bytes:
        return bytes(self._call("mem_read", addr, length))

    def mem_write(self, addr: int, data: bytes) -> None:
        self._call("mem_write", addr, data)

    def clock_step(self, ns: int | None = None) -> int:
        return int(self._call("clock_step", ns))

    def irq_level(self) -> bool:
        return bool(self._call("irq_level"))

    def irq_events(self) -> list[bool]:
        return list(self._call("irq_events"))

    def image_read(self, offset: int, length: int) -> bytes:
        return bytes(self._call("image_read", offset, length))


class RecordingSide(_CallTarget):
    """A Target that passes every call to ``inner`` (QEMU) and records it."""

    def __init__(self, inner: QemuTarget, recording: Recording) -> None:
        self.inner = inner
        self.rec = recording
        self.name = inner.name
        self.machine = inner.machine
        self.image = inner.image
        self.image_format = inner.image_format
        recording.machine = inner.machine
        recording.image_format = inner.image_format

    def _call(self, method: str, *args: Any) -> Any:
        answer = getattr(self.inner, method)(*args)
        self.rec.calls.append(Call(method, args, answer, len(self.inner.qtest.trace)))
        return answer

    @property
    def trace(self) -> list[str]:
        return self.inner.trace

    @property
    def trace_len(self) -> int:
        return self.inner.trace_len

    def replay_argv(self) -> list[str]:
        return self.inner.replay_argv()

    def finish(self) -> None:
        """Keep QEMU's trace and a copy of its final card image (QEMU stays up:
        a pool may reuse it)."""
        rec = self.rec
        rec.trace = list(self.inner.trace)
        rec.replay_argv = self.inner.replay_argv()
        if self.inner.image is not None and rec._dir is None:
            rec._dir = tempfile.TemporaryDirectory(prefix="sdqtest-rec-")
            rec.image = copy_image(self.inner.image, Path(rec._dir.name))

    def close(self) -> None:
        """:meth:`finish`, then close QEMU."""
        self.finish()
        self.inner.close()


class ReplayTarget(_CallTarget):
    """QEMU's target as the recording saw it: answers in recorded order."""

    def __init__(self, recording: Recording) -> None:
        if recording.machine is None:
            raise ValueError("the recording holds no run")
        self.rec = recording
        self.name = "qemu-replay"
        self.machine: Machine = recording.machine
        self.image = recording.image
        self.image_format = recording.image_format
        self.pos = 0

    def _call(self, method: str, *args: Any) -> Any:
        calls = self.rec.calls
        if self.pos < len(calls):
            c = calls[self.pos]
            if c.method == method and c.args == args:
                self.pos += 1
                return c.answer
            raise Departed(f"the run left QEMU's recorded path: it asked {method}"
                           f"{_args(args)} where QEMU was asked {c.method}{_args(c.args)}")
        raise Departed(f"the run went past the end of QEMU's recorded run: it asked "
                       f"{method}{_args(args)}")

    @property
    def trace(self) -> list[str]:
        """QEMU's qtest trace up to the last replayed call."""
        return self.rec.trace[:self.trace_len]

    @property
    def trace_len(self) -> int:
        return self.rec.calls[self.pos - 1].trace_len if self.pos else 0

    def replay_argv(self) -> list[str]:
        return list(self.rec.replay_argv)

    def image_read(self, offset: int, length: int) -> bytes:
        """The recorded answer, or (off the recorded path, where QEMU's card
        is final) the bytes of the copy of QEMU's final image."""
        calls = self.rec.calls
        if self.pos < len(calls) and calls[self.pos].method == "image_read" \
                and calls[self.pos].args == (offset, length):
            return bytes(self._call("image_read", offset, length))
        done = self.pos == len(calls) or all(c.method == "image_read"
                                              for c in calls[self.pos:])
        if self.rec.image is None or not done:
            return bytes(self._call("image_read", offset, length))
        if self.image_format != "raw":
            return read_container(self.rec.image, self.image_format, offset, length)
        with open(self.rec.image, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def close(self) -> None:
        pass


def _args(args: tuple[Any, ...]) -> str:
    shown = [f"<{len(a)} bytes>" if isinstance(a, bytes) else
             (hex(a) if isinstance(a, int) and not isinstance(a, bool) else repr(a))
             for a in args]
    return "(" + ", ".join(shown) + ")"
