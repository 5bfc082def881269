"""AddressSanitizer and UBSan reports on QEMU's stderr, as findings.

A QEMU configured with ``--enable-asan`` / ``--enable-ubsan`` (``sdqtest
qemu build SRC --sanitize address,undefined``) writes a report to stderr
when it touches memory it must not, or does arithmetic C leaves undefined.
The formats are the sanitizers' own (compiler-rt ``asan_report``,
``ubsan_diag``)::

    ==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6190... at pc ...
    WRITE of size 4 at 0x6190... thread T0
        #0 0x55d... in sdhci_write_dataport ../hw/sd/sdhci.c:479:35
        #1 0x55d... in sdhci_write ../hw/sd/sdhci.c:1148:13
    ...
    SUMMARY: AddressSanitizer: heap-buffer-overflow ../hw/sd/sdhci.c:479:35 in ...

    ../hw/sd/sd.c:1712:9: runtime error: index 512 out of bounds for type 'uint8_t[512]'
        #0 0x55d... in sd_write_byte ../hw/sd/sd.c:1712:9    (print_stacktrace=1)

By default ASan stops QEMU at the first report (exit status 1); with
``halt_on_error=0`` (and ``-fsanitize-recover``), and always for UBSan's
recoverable checks, QEMU goes on and the reports pile up: :func:`parse`
returns every one.  A report's signature names its kind and the top frame
in ``hw/sd`` (else the top frame), never addresses or line numbers, so one
bug reached many ways has one signature.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_ASAN = re.compile(r"==\d+==ERROR: (AddressSanitizer|LeakSanitizer): ([\w-]+)")
_UBSAN = re.compile(r"^(\S+?):(\d+)(?::\d+)?: runtime error: (.*)$")
_ACCESS = re.compile(r"^(READ|WRITE) of size (\d+) at ")
_FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-fA-F]+ in (\S+) (\S+?)(?::(\d+))?(?::\d+)?$")
_FRAME_BARE = re.compile(r"^\s*#(\d+) 0x[0-9a-fA-F]+ ")
_SUMMARY = re.compile(r"^SUMMARY: (\w+Sanitizer): ")

#: Options the harness gives a sanitizer build unless the user set them:
#: QEMU leaks at exit by design (LeakSanitizer would fail every clean run),
#: and UBSan's reports carry their stack only when asked.
DEFAULT_OPTIONS = {"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "print_stacktrace=1"}


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    line: int | None = None

    @property
    def in_hw_sd(self) -> bool:
        return "hw/sd/" in self.file


@dataclass
class Report:
    """One sanitizer report."""

    tool: str  #: "AddressSanitizer", "UndefinedBehaviorSanitizer", "LeakSanitizer"
    kind: str  #: "heap-buffer-overflow", "index out of bounds", ...
    access: str = ""  #: "READ" or "WRITE" (ASan)
    size: int | None = None  #: bytes of the bad access (ASan)
    frames: list[Frame] = field(default_factory=list)
    #: Where UBSan says it happened (``file:line``); ASan's top frame otherwise.
    where: str = ""
    headline: str = ""

    @property
    def sd_frames(self) -> list[Frame]:
        return [f for f in self.frames if f.in_hw_sd]

    @property
    def top(self) -> str:
        """The function the signature names: the top ``hw/sd`` frame, else
        the top frame, else the file UBSan named."""
        sd = self.sd_frames
        if sd:
            return sd[0].function
        if self.frames:
            return self.frames[0].function
        return os.path.basename(self.where.split(":")[0]) if self.where else "?"

    @property
    def signature(self) -> str:
        short = {"AddressSanitizer": "asan", "UndefinedBehaviorSanitizer": "ubsan",
                 "LeakSanitizer": "lsan"}.get(self.tool, self.tool)
        kind = re.sub(r"[^a-z0-9]+", "-", self.kind.lower()).strip("-")
        return f"{short}:{kind}:{self.top}"

    def summary(self) -> str:
        """One line: tool, kind, access, the first ``hw/sd`` frames."""
        text = f"{self.tool}: {self.kind}"
        if self.access:
            text += f", {self.access} of size {self.size}"
        frames = self.sd_frames[:3] or self.frames[:1]
        if frames:
            text += " in " + " < ".join(
                f"{f.function} ({os.path.basename(f.file)}"
                + (f":{f.line})" if f.line is not None else ")") for f in frames)
        elif self.where:
            text += f" at {self.where}"
        return text


def _ubsan_kind(message: str) -> str:
    """UBSan's message without its values: ``index 512 out of bounds for
    type 'uint8_t[512]'`` -> ``index out of bounds``."""
    m = message.split(" for type", 1)[0]
    m = re.sub(r"'[^']*'", "", m)
    m = re.sub(r"-?\b(0x[0-9a-fA-F]+|\d+)\b", "", m)
    return re.sub(r"\s+", " ", m).strip(" :,")


_INSTRUMENTED: dict[tuple[str, int, float], bool] = {}


def instrumented(binary: str | os.PathLike[str]) -> bool:
    """Whether ``binary`` was built with AddressSanitizer or UBSan: it calls
    the runtimes' entry points (``__asan_init``, ``__ubsan_handle_*``)."""
    st = os.stat(binary)
    key = (os.fspath(binary), st.st_size, st.st_mtime)
    if key not in _INSTRUMENTED:
        found, tail = False, b""
        with open(binary, "rb") as f:
            while not found and (chunk := f.read(1 << 22)):
                found = b"__asan_init" in tail + chunk or b"__ubsan_handle_" in tail + chunk
                tail = chunk[-32:]
        _INSTRUMENTED[key] = found
    return _INSTRUMENTED[key]


def parse(stderr: str) -> list[Report]:
    """Every sanitizer report in ``stderr``, in order."""
    out: list[Report] = []
    cur: Report | None = None
    for raw in stderr.splitlines():
        line = raw.rstrip()
        m = _ASAN.search(line)
        if m:
            cur = Report(m.group(1), m.group(2), headline=line.strip())
            out.append(cur)
            continue
        m = _UBSAN.match(line.strip())
        if m:
            cur = Report("UndefinedBehaviorSanitizer", _ubsan_kind(m.group(3)),
                         where=f"{m.group(1)}:{m.group(2)}", headline=line.strip())
            out.append(cur)
            continue
        if cur is None:
            continue
        m = _ACCESS.match(line.strip())
        if m and not cur.access:
            cur.access, cur.size = m.group(1), int(m.group(2))
            continue
        m = _FRAME.match(line)
        if m:
            if m.group(1) == "0" and cur.frames:
                cur = None  # a second stack (freed by / allocated by): not the access
                continue
            cur.frames.append(Frame(m.group(2), m.group(3),
                                    int(m.group(4)) if m.group(4) else None))
            continue
        if _SUMMARY.match(line) or (not line.strip() and cur.frames):
            cur = None
    return out


def first(stderr: str) -> Report | None:
    """The first report that is not a leak (leaks are reported at exit)."""
    return next((r for r in parse(stderr) if r.tool != "LeakSanitizer"), None)


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with
    :data:`DEFAULT_OPTIONS` added where the user set none."""
    env = dict(os.environ if base is None else base)
    for k, v in DEFAULT_OPTIONS.items():
        env.setdefault(k, v)
    return env


def _stderr(target: object) -> str | None:
    """QEMU's stderr so far, for a QEMU target (or a wrapper of one with
    ``inner``); None for anything else (a replay, the model)."""
    for _ in range(3):
        session = getattr(target, "session", None)
        if session is not None and callable(getattr(session, "stderr", None)):
            text = session.stderr()
            return text if isinstance(text, str) else None
        target = getattr(target, "inner", None)
        if target is None:
            return None
    return None


def mark(target: object) -> int:
    """Where QEMU's stderr ends now (a reused QEMU keeps one stderr for
    many runs: only what comes after the mark is this run's)."""
    text = _stderr(target)
    return len(text) if text is not None else 0


def since(target: object, at: int) -> Report | None:
    """The first sanitizer report QEMU wrote after ``at`` (see :func:`mark`)
    that did not stop it: ``halt_on_error=0``, or UBSan's recoverable checks."""
    text = _stderr(target)
    return first(text[at:]) if text else None
