"""What the commands share: the ``--qemu`` and board options, the progress
line, and the exit status each error of the tree maps to."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from harness.errors import QemuError, SdqtestError, UsageError


def qemu_option(sp: argparse.ArgumentParser) -> None:
    """``--qemu NAME|PATH``, repeatable."""
    sp.add_argument(
        "--qemu", action="append", metavar="NAME|PATH",
        help="QEMU build: an installed name (7.2, 10.0, 11.1) or a binary path; "
        "repeatable (default: $QTEST_QEMU_BINARY, else every installed build)",
    )


def board_options(p: Any) -> None:
    """``--board`` and ``--no-boards``, as ``check`` and ``bench check`` take them."""
    from harness.check.boards import DEFAULT_BOARDS
    from harness.hwdefs.boards import BOARDS

    p.add_argument("--board", action="append", metavar="NAME", nargs="?", const="all",
                   help="run on ARM boards' SD controllers instead ("
                   + ", ".join(b.name for b in BOARDS) + ", or all: the default with no NAME; "
                   "comma-separated), on the ARM builds (7.2-arm, 10.0-arm, 11.1-arm) "
                   "or --qemu")
    p.add_argument("--no-boards", action="store_true",
                   help="leave out the boards the default check runs ("
                   + ", ".join(DEFAULT_BOARDS) + " on the installed ARM builds; see "
                   "docs/boards.md)")


def show_progress(text: str) -> None:
    """The shared status line (:mod:`harness.progress`): live on a terminal,
    elsewhere (CI logs) a plain line at least and at most every 30 seconds;
    ``""`` takes it down."""
    from harness import progress

    progress.show(text)


def call(args: argparse.Namespace) -> int:
    """Run the command ``args.func`` names; each error of the tree is one
    line on stderr and its exit status (2 bad input, 3 QEMU, 130
    interrupted); any other exception is a bug of sdqtest: one line, its
    traceback in a file (in ``--report-dir`` where the command has one),
    exit status 70 (:mod:`harness.commands.failure`)."""
    from harness.commands import failure

    try:
        rc: int = args.func(args)
        return rc
    except UsageError as e:
        print(f"sdqtest: error: {e}", file=sys.stderr)
        return failure.EXIT_USAGE
    except QemuError as e:
        print(f"sdqtest: QEMU error: {e}", file=sys.stderr)
        return 3
    except SdqtestError as e:  # cannot start: a build, an image, an install step
        print(f"sdqtest: error: {e}", file=sys.stderr)
        return failure.EXIT_USAGE
    except KeyboardInterrupt:
        print("sdqtest: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): no more output, no traceback
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # noqa: BLE001 - a bug of sdqtest: said so, never exit 1
        report_dir = getattr(args, "report_dir", None)
        line, rc = failure.internal_error(e, Path(report_dir) if report_dir else None)
        print(f"sdqtest: {line}", file=sys.stderr)
        return int(getattr(args, "internal_exit", rc))


def check_output(option: str, path: str | None, *, directory: bool = False) -> None:
    """Refuse, before anything runs, an output the command could not write
    at its end: a file (``-``: standard output) whose directory does not
    exist or cannot be written, or that is a directory; a ``directory``
    that cannot be made or written (it is made when first needed)."""
    if path is None or (path == "-" and not directory):
        return
    p = Path(path)
    if directory:
        if p.exists() and not p.is_dir():
            raise UsageError(f"{option} {path}: not a directory")
        near = next((a for a in (p, *p.absolute().parents) if a.exists()), Path("/"))
        if not near.is_dir():
            raise UsageError(f"{option} {path}: {near} is not a directory")
        if not os.access(near, os.W_OK | os.X_OK):
            raise UsageError(f"{option} {path}: {near} cannot be written")
        return
    parent = p.absolute().parent
    if p.is_dir():
        raise UsageError(f"{option} {path}: is a directory, not a file")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UsageError(f"{option} {path}: cannot be written")


def write_json(data: Any, dest: str, stdout: TextIO | None = None) -> None:
    """``data`` as indented JSON into file ``dest``, or on ``stdout``
    (default: standard output) when ``dest`` is ``-``."""
    text = json.dumps(data, indent=1) + "\n"
    if dest == "-":
        out = stdout or sys.stdout
        out.write(text)
        out.flush()
    else:
        Path(dest).write_text(text)


#: Version of the JSON documents of ``qemu list``, ``bugs``, ``compat`` and
#: ``migrate`` (``harness/schemas/COMMAND.schema.json``); ``check`` has its own
#: (:data:`harness.check.report.SCHEMA_VERSION`).
SCHEMA_VERSION = 1


def json_option(p: Any, what: str) -> None:
    """``--json FILE|-``: the command's result as a JSON document."""
    p.add_argument("--json", metavar="FILE|-",
                   help=f"write {what} as JSON (schema_version, command, summary; schema: "
                   "harness/schemas/); '-': on standard output, the text then on standard "
                   "error")


def document(command: str, summary: dict[str, Any], **body: Any) -> dict[str, Any]:
    """A command's JSON document: its schema version, its name, its summary
    block, then its own keys."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "summary": summary, **body}


@contextlib.contextmanager
def machine_output(args: argparse.Namespace) -> Iterator[TextIO]:
    """The command's body: its ``--json`` checked writable first; with
    ``--json -`` the text it prints goes to standard error.  Yields the
    real standard output, for :func:`write_json`."""
    dest = getattr(args, "json", None)
    check_output("--json", dest)
    stdout = sys.stdout
    if dest == "-":
        with contextlib.redirect_stdout(sys.stderr):
            yield stdout
    else:
        yield stdout


def parse_one(register: Callable[[Any], None], argv: list[str]) -> argparse.Namespace:
    """``argv`` (a command and its arguments) parsed as ``sdqtest`` parses it,
    by a parser that holds only the command ``register`` adds."""
    p = argparse.ArgumentParser(prog="sdqtest")
    register(p.add_subparsers(dest="command", required=True))
    return p.parse_args(argv)


def add_difference_options(p: Any) -> None:
    """``--max-differences N`` and ``--first-only`` (:mod:`harness.check.scoreboard`)."""
    from harness.check.scoreboard import DEFAULT_MAX_DIFFERENCES

    g = p.add_mutually_exclusive_group()
    g.add_argument("--max-differences", type=int, default=DEFAULT_MAX_DIFFERENCES, metavar="N",
                   help="a run goes on past a difference (the reference takes the other "
                   "side's value for what differed) until N distinct differences "
                   f"(default {DEFAULT_MAX_DIFFERENCES}); a QEMU crash or hang still ends it")
    g.add_argument("--first-only", action="store_true",
                   help="stop each run at its first difference (the old behaviour)")


def max_differences(args: argparse.Namespace) -> int:
    """The limit ``args`` ask for (1 with ``--first-only``)."""
    if getattr(args, "first_only", False):
        return 1
    n = int(getattr(args, "max_differences", 1))
    if n < 1:
        raise UsageError(f"--max-differences {n}: at least 1")
    return n
