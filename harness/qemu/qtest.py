"""A client for QEMU's qtest protocol (``system/qtest.c``).

One text line per command, one ``OK``/``FAIL``/``ERR`` line per answer, and
asynchronous ``IRQ raise N`` / ``IRQ lower N`` lines that QEMU may send at any
moment once ``irq_intercept_in``/``irq_intercept_out`` is on.  This client

* consumes the IRQ lines wherever they arrive and keeps the current level of
  every intercepted line (:attr:`QtestClient.irq_levels`);
* validates every argument before sending: QEMU answers many malformed
  commands with ``g_assert`` and dies;
* can pipeline: :meth:`QtestClient.batch` sends many commands before reading
  the answers, which come back in order;
* records every command it sends (:attr:`QtestClient.trace`) so that
  ``qemu-system-x86_64 ... -qtest stdio < trace`` replays the session.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import NoReturn

from harness.errors import QemuError, QemuGone

_SIZES = {1: "b", 2: "w", 4: "l", 8: "q"}
#: The shortest line QEMU's qtest answers a command with (``OK`` and its
#: newline, qtest.c); a FAIL or ERR answer is longer.
MIN_ANSWER = 3
#: Most bytes a pipelined read waits for before it wakes (``SO_RCVLOWAT``),
#: well inside the socket's buffer.
_LOWAT_CAP = 1 << 14
_IRQ_RE = re.compile(rb"^IRQ (raise|lower) (\d+)$")
#: QOM paths and GPIO names: no white space, nothing that splits a command.
_PATH_RE = re.compile(r"^[A-Za-z0-9_./\[\]:-]+$")


class QtestError(QemuError):
    """QEMU answered a command with ``FAIL`` or ``ERR``."""

    def __init__(self, command: str, answer: str) -> None:
        super().__init__(f"qtest {command!r} answered {answer!r}")
        self.command = command
        self.answer = answer


class QtestTimeout(QemuGone):
    """QEMU did not answer in time (it may be hung)."""


class QtestClosed(QemuGone):
    """The qtest stream ended: QEMU has gone."""


def _check_int(name: str, value: int, bits: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise ValueError(f"{name}={value:#x} does not fit in {bits} bits")


def _check_path(name: str, value: str) -> None:
    if not _PATH_RE.match(value):
        raise ValueError(f"{name} {value!r} is not a valid QOM path or name")


class QtestClient:
    """The qtest protocol over a connected stream socket.

    Reads block in the kernel with a timeout.  QEMU's death closes the
    socket, so it is seen at once as end of stream (``on_eof`` is called to
    report how QEMU ended); a QEMU that stops answering is reported after
    ``timeout`` seconds (``on_timeout`` is called, to kill it).
    """

    def __init__(
        self,
        sock: socket.socket,
        *,
        timeout: float = 10.0,
        on_eof: Callable[[], None] | None = None,
        on_timeout: Callable[[], None] | None = None,
    ) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._rbuf = bytearray(1 << 16)
        self._rview = memoryview(self._rbuf)
        self.timeout = timeout
        # Kernel-side timeouts on a blocking socket: one syscall per send or
        # receive (Python's own timeout mode adds a poll() before each).
        self._sock.settimeout(None)
        tv = struct.pack("ll", int(timeout), int((timeout % 1) * 1e6))
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        self._on_eof = on_eof
        self._on_timeout = on_timeout
        self.irq_levels: dict[int, bool] = {}
        self.irq_events: list[tuple[int, bool]] = []
        self.trace: list[str] = []
        self.closed = False
        self._reads: dict[tuple[int, int], tuple[str, bytes]] = {}

    # -- wire level ---------------------------------------------------------

    #: Commands (lines) every client of this process has sent: ``check
    #: --profile`` sets the check's wire time against its wall time.
    commands_sent = 0

    def _sendall(self, data: bytes) -> None:
        QtestClient.commands_sent += data.count(b"\n")
        if self.closed:
            raise QtestClosed("qtest stream is closed")
        try:
            self._sock.sendall(data)
        except (TimeoutError, BlockingIOError) as e:
            self._timed_out(e)
        except (BrokenPipeError, ConnectionResetError) as e:
            self._eof()
            raise QtestClosed("QEMU closed the qtest stream") from e

    def _timed_out(self, e: BaseException) -> NoReturn:
        if self._on_timeout is not None:
            self._on_timeout()
        self.closed = True
        raise QtestTimeout(
            f"no answer from QEMU within {self.timeout:g} s (hung); it was stopped"
        ) from e

    def _eof(self) -> None:
        self.closed = True
        if self._on_eof is not None:
            self._on_eof()

    def _recv(self, size: int) -> bytes:
        """One recv; end of stream and time-outs become our exceptions."""
        try:
            chunk = self._sock.recv(size)
        except (TimeoutError, BlockingIOError) as e:
            self._timed_out(e)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self._eof()
            raise QtestClosed("QEMU closed the qtest stream")
        return chunk

    def _set_lowat(self, n: int) -> None:
        with contextlib.suppress(OSError):  # the stream may be gone already
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, n)

    def _recv_more(self) -> int:
        """One recv appended to the buffer, into a buffer kept for it (a
        plain ``recv(65536)`` allocates and shrinks 64 KiB each time);
        the newlines it brought."""
        view = self._rview
        try:
            n = self._sock.recv_into(view)
        except (TimeoutError, BlockingIOError) as e:
            self._timed_out(e)
        except ConnectionResetError:
            n = 0
        if not n:
            self._eof()
            raise QtestClosed("QEMU closed the qtest stream")
        self._buf += view[:n]
        return self._rbuf.count(b"\n", 0, n)

    def _readline(self) -> bytes:
        buf = self._buf
        if not buf:
            # Fast path: the usual answer arrives alone, in one piece.  A
            # small recv: CPython allocates the whole size for each call.
            chunk = self._recv(1024)
            if chunk.find(b"\n") == len(chunk) - 1:
                return chunk[:-1]
            buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                line = bytes(buf[:nl])
                del buf[: nl + 1]
                return line
            self._recv_more()

    def _read_answer(self) -> str:
        """Read lines until the next command answer, handling IRQ lines."""
        while True:
            line = self._readline()
            event = self._irq_line(line)
            if event is not None:
                self.irq_events.append(event)
                continue
            return line.decode("ascii", "replace")

    def _irq_line(self, line: bytes) -> tuple[int, bool] | None:
        """An ``IRQ raise N``/``IRQ lower N`` line as its event (line, raised),
        the line's level recorded; None for any other line."""
        if not line.startswith(b"IRQ "):
            return None
        m = _IRQ_RE.match(line)
        if m is None:
            return None
        event = (int(m.group(2)), m.group(1) == b"raise")
        self.irq_levels[event[0]] = event[1]
        return event

    def command(self, line: str) -> str:
        """Send one validated command line and return its ``OK`` answer."""
        if "\n" in line:
            raise ValueError("a qtest command is one line")
        self.trace.append(line)
        self._sendall((line + "\n").encode())
        answer = self._read_answer()
        if not answer.startswith("OK"):
            raise QtestError(line, answer)
        return answer

    # -- pipelining ---------------------------------------------------------

    def pipeline(self, commands: Iterable[str]) -> list[str]:
        """Send ``commands`` in one write, then read every answer, in order.

        Build the lines with the ``fmt_*`` functions of this module so that
        they are validated.  A ``FAIL``/``ERR`` answer raises only after all
        answers have been read, so the stream stays in step.
        """
        cmds = list(commands)
        if not cmds:
            return []
        if any("\n" in c for c in cmds):
            raise ValueError("a qtest command is one line")
        self.trace.extend(cmds)
        self._sendall(("\n".join(cmds) + "\n").encode())
        answers = [self._read_answer() for _ in cmds]
        for c, a in zip(cmds, answers, strict=True):
            if not a.startswith("OK"):
                raise QtestError(c, a)
        return answers

    def send_lines(self, commands: Sequence[str]) -> None:
        """Send ``commands`` in one write without reading an answer; read
        them with :meth:`read_answers`, in order.  Keep what is sent and not
        yet read within the socket's buffers (a few tens of KiB): QEMU
        stops reading while its answers wait to be read."""
        if not commands:
            return
        text = "\n".join(commands)
        if text.count("\n") != len(commands) - 1:
            raise ValueError("a qtest command is one line")
        self.trace.extend(commands)
        self._sendall((text + "\n").encode())

    def read_answers(self, n: int) -> tuple[list[str], list[int] | None]:
        """The next ``n`` answers, and the marks: each answer's
        ``len(irq_events)`` as it arrived (``None``: no ``IRQ`` line came
        among them, every mark is ``len(irq_events)``).  QEMU answers a
        command after running it and sends the ``IRQ`` lines the command
        caused before its answer, so the events between answer ``k - 1`` and
        answer ``k`` came during command ``k`` (as one command at a time
        would have them).  A ``FAIL``/``ERR`` answer raises once all ``n``
        have been read."""
        if n <= 0:
            return [], None
        buf = self._buf
        have = buf.count(b"\n")
        lowat = 1
        try:
            while have < n:  # the usual case: n answers, no IRQ line
                # Wake only once the answers still due can have come: each
                # is a line of at least MIN_ANSWER bytes, so QEMU sends at
                # least that much for them (IRQ lines only add to it).
                # Woken at every line QEMU writes, we would recv by the line.
                want = max(1, min((n - have) * MIN_ANSWER, _LOWAT_CAP))
                if want != lowat:
                    self._set_lowat(want)
                    lowat = want
                have += self._recv_more()
        finally:
            if lowat != 1:
                self._set_lowat(1)
        end = _nth_newline(buf, n)
        if buf.find(b"IRQ ", 0, end) < 0:
            text = buf[:end].decode("ascii", "replace")
            del buf[:end + 1]
            texts = text.split("\n")
            if ("\n" + text).count("\nOK") != n:
                self._raise_failed(texts)
            return texts, None
        return self._read_with_irqs(n)

    def _read_with_irqs(self, n: int) -> tuple[list[str], list[int]]:
        """:meth:`read_answers` where ``IRQ`` lines come among the answers:
        line by line, each event taken as :meth:`_read_answer` takes it."""
        events = self.irq_events
        buf, pos = self._buf, 0
        texts: list[str] = []
        marks: list[int] = []
        while len(texts) < n:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                del buf[:pos]
                pos = 0
                self._recv_more()
                continue
            line = bytes(buf[pos:nl])
            pos = nl + 1
            if line.startswith(b"IRQ ") and (event := self._irq_line(line)) is not None:
                events.append(event)
                continue
            texts.append(line.decode("ascii", "replace"))
            marks.append(len(events))
        del buf[:pos]
        if any(not a.startswith("OK") for a in texts):
            self._raise_failed(texts)
        return texts, marks

    @staticmethod
    def _raise_failed(texts: list[str]) -> None:
        """The first answer of a pipelined run that is not ``OK``, raised."""
        for i, a in enumerate(texts):
            if not a.startswith("OK"):
                raise QtestError(f"command {i + 1} of {len(texts)} pipelined", a)

    # -- the protocol, typed ------------------------------------------------

    def clock_step(self, ns: int | None = None) -> int:
        """Advance virtual time (to the next timer deadline when ``ns`` is None)."""
        return parse_int(self.command(fmt_clock_step(ns)))

    def clock_set(self, ns: int) -> int:
        _check_int("ns", ns, 63)
        return parse_int(self.command(f"clock_set {ns}"))

    def out(self, size: int, port: int, value: int) -> None:
        self.command(fmt_out(size, port, value))

    def in_(self, size: int, port: int) -> int:
        return parse_int(self.command(fmt_in(size, port)))

    def mmio_write(self, size: int, addr: int, value: int) -> None:
        self.command(fmt_mmio_write(size, addr, value))

    def mmio_read(self, size: int, addr: int) -> int:
        """``readX ADDR``; the hot path of every register read, so the
        validated command line is built once per (size, address)."""
        line = self._reads.get((size, addr))
        if line is None:
            text = fmt_mmio_read(size, addr)
            line = (text, (text + "\n").encode())
            if len(self._reads) < 4096:
                self._reads[(size, addr)] = line
        self.trace.append(line[0])
        self._sendall(line[1])
        answer = self._read_answer()
        if answer[:3] != "OK ":
            raise QtestError(line[0], answer)
        return int(answer[3:], 16)

    def memread(self, addr: int, length: int) -> bytes:
        """``read ADDR LEN``: hex encoded on the wire."""
        _check_int("addr", addr, 64)
        if length <= 0:
            raise ValueError("read length must be positive (QEMU asserts on 0)")
        answer = self.command(f"read {addr:#x} {length:#x}")
        return bytes.fromhex(answer.split()[1][2:])

    def memwrite(self, addr: int, data: bytes) -> None:
        """``write ADDR LEN 0xHEX``."""
        if data:
            self.command(fmt_write(addr, data))

    def b64read(self, addr: int, length: int) -> bytes:
        _check_int("addr", addr, 64)
        if length <= 0:
            raise ValueError("b64read length must be positive")
        answer = self.command(f"b64read {addr:#x} {length:#x}")
        return base64.b64decode(answer.split()[1])

    def b64write(self, addr: int, data: bytes) -> None:
        if data:
            self.command(fmt_b64write(addr, data))

    def memset(self, addr: int, length: int, value: int) -> None:
        _check_int("addr", addr, 64)
        _check_int("value", value, 8)
        if length > 0:
            self.command(f"memset {addr:#x} {length:#x} {value:#x}")

    def irq_intercept_in(self, qom_path: str) -> None:
        _check_path("QOM path", qom_path)
        self.command(f"irq_intercept_in {qom_path}")

    def irq_intercept_out(self, qom_path: str) -> None:
        _check_path("QOM path", qom_path)
        self.command(f"irq_intercept_out {qom_path}")

    def set_irq_in(self, qom_path: str, name: str, num: int, level: int) -> None:
        _check_path("QOM path", qom_path)
        _check_path("GPIO name", name)
        _check_int("num", num, 31)
        if level not in (0, 1):
            raise ValueError("level is 0 or 1")
        self.command(f"set_irq_in {qom_path} {name} {num} {level}")

    def endianness(self) -> str:
        return self.command("endianness").split()[1]


# -- validated command lines, for command() and pipeline() --------------------


def parse_int(answer: str) -> int:
    """The number in an ``OK <n>`` answer (decimal, or hex with 0x)."""
    return int(answer.split()[1], 0)


def fmt_clock_step(ns: int | None = None) -> str:
    if ns is None:
        return "clock_step"
    _check_int("ns", ns, 63)
    if ns == 0:
        raise ValueError("clock_step 0 does not advance time (newer QEMU answers FAIL)")
    return f"clock_step {ns}"


def fmt_out(size: int, port: int, value: int) -> str:
    if size not in (1, 2, 4):
        raise ValueError("port I/O is 1, 2 or 4 bytes")
    _check_int("port", port, 16)
    _check_int("value", value, 8 * size)
    return f"out{_SIZES[size]} {port:#x} {value:#x}"


def fmt_in(size: int, port: int) -> str:
    if size not in (1, 2, 4):
        raise ValueError("port I/O is 1, 2 or 4 bytes")
    _check_int("port", port, 16)
    return f"in{_SIZES[size]} {port:#x}"


def _nth_newline(buf: bytearray, n: int) -> int:
    """The index of the ``n``th newline of ``buf`` (it has that many)."""
    if buf.endswith(b"\n") and buf.count(b"\n") == n:
        return len(buf) - 1
    pos = -1
    for _ in range(n):
        pos = buf.index(b"\n", pos + 1)
    return pos


def fmt_mmio_write(size: int, addr: int, value: int) -> str:
    if size not in _SIZES:
        raise ValueError("MMIO accesses are 1, 2, 4 or 8 bytes")
    _check_int("addr", addr, 64)
    _check_int("value", value, 8 * size)
    return f"write{_SIZES[size]} {addr:#x} {value:#x}"


def fmt_mmio_read(size: int, addr: int) -> str:
    if size not in _SIZES:
        raise ValueError("MMIO accesses are 1, 2, 4 or 8 bytes")
    _check_int("addr", addr, 64)
    return f"read{_SIZES[size]} {addr:#x}"


def fmt_write(addr: int, data: bytes) -> str:
    _check_int("addr", addr, 64)
    if not data:
        raise ValueError("write needs data (QEMU rejects an empty one)")
    return f"write {addr:#x} {len(data):#x} 0x{data.hex()}"


def fmt_b64read(addr: int, length: int) -> str:
    _check_int("addr", addr, 64)
    if length <= 0:
        raise ValueError("b64read length must be positive")
    return f"b64read {addr:#x} {length:#x}"


def fmt_b64write(addr: int, data: bytes) -> str:
    _check_int("addr", addr, 64)
    if not data:
        raise ValueError("b64write needs data")
    return f"b64write {addr:#x} {len(data):#x} {base64.b64encode(data).decode()}"


#: Largest chunk moved in one b64read/b64write line.
B64_CHUNK = 1 << 16


def b64read_lines(addr: int, length: int) -> list[str]:
    """The b64read lines that read ``length`` bytes at ``addr``, a chunk each."""
    return [fmt_b64read(addr + pos, min(B64_CHUNK, length - pos))
            for pos in range(0, length, B64_CHUNK)]


def b64write_lines(addr: int, data: bytes) -> list[str]:
    """The b64write lines that write ``data`` at ``addr``, a chunk each."""
    return [fmt_b64write(addr + pos, data[pos:pos + B64_CHUNK])
            for pos in range(0, len(data), B64_CHUNK)]
