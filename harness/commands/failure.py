"""How ``sdqtest`` ends: the exit statuses every command shares, and what
it does on an internal error (a bug of sdqtest itself, never QEMU's).

An exception that no layer of the harness expected (not one of the tree in
:mod:`harness.errors`) ends the command with :data:`EXIT_INTERNAL` (70,
``EX_SOFTWARE`` of BSD's ``sysexits.h``: "an internal software error"),
a status no command gives for anything else, so that CI never takes a
harness bug for a QEMU regression.  It prints one line on stderr, naming
the exception, where it was raised and the file holding its traceback.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

from harness.errors import EXIT_INTERNAL

__all__ = ["COMMON_EXITS", "EXIT_INTERNAL", "EXIT_USAGE", "epilog", "internal_error",
           "one_line", "write_traceback"]

#: Bad input, an output that cannot be written, a build that cannot be probed.
EXIT_USAGE = 2
#: The exit statuses every command shares, beside its own (``--help``).
COMMON_EXITS = (f"{EXIT_USAGE} usage error or bad input (an output path that cannot be "
                "written, a build that cannot be probed); 3 QEMU failed the harness; "
                f"{EXIT_INTERNAL} internal error of sdqtest (one line on stderr, the "
                "traceback in the file it names); 130 interrupted")


def epilog(own: str) -> str:
    """A command's ``--help`` epilog: its own exit statuses, then the shared ones."""
    return f"exit status: {own}; {COMMON_EXITS}."


def where(exc: BaseException) -> str:
    """``file:line function`` of the innermost frame that raised ``exc``,
    the file relative to the package's parent when it lies in it."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    f = frames[-1]
    root = Path(__file__).resolve().parents[2]
    path = Path(f.filename)
    shown = str(path.relative_to(root)) if path.is_relative_to(root) else f.filename
    return f"{shown}:{f.lineno} {f.name}"


def write_traceback(text: str, directory: Path | None = None) -> Path:
    """``text`` (a traceback) in a new file of ``directory`` (made if need
    be), else of the temporary directory when that cannot be written."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for d in ([directory] if directory is not None else []) + [Path(tempfile.gettempdir())]:
        try:
            d.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"sdqtest-traceback-{stamp}-", suffix=".txt",
                                        dir=d)
        except OSError:
            continue
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return Path(name)
    raise OSError("no directory to write the traceback in")


def one_line(what: str, trace_file: Path | None) -> str:
    """The line an internal error prints (without the ``sdqtest: `` prefix)."""
    told = f"; traceback in {trace_file}" if trace_file is not None else ""
    return f"internal error of sdqtest (a bug of sdqtest, not of QEMU): {what}{told}"


def internal_error(exc: BaseException, directory: Path | None = None) -> tuple[str, int]:
    """The line to print for ``exc`` and :data:`EXIT_INTERNAL`, its traceback
    written to a file (in ``directory`` if it can be)."""
    text = "".join(traceback.format_exception(exc))
    try:
        path: Path | None = write_traceback(text, directory)
    except OSError:
        path = None
    first = (str(exc).splitlines() or [""])[0][:200]
    what = f"{type(exc).__name__}" + (f": {first}" if first else "") + f" at {where(exc)}"
    return one_line(what, path), EXIT_INTERNAL
