"""``check --tap [FILE|-]``: the results as TAP, so that ``meson test`` runs
the check as one test the way QEMU's qtests are run (``protocol: 'tap'``).

TAP version 14 (testanything.org's specification), kept to what meson's
TAP parser accepts: the version line first, the plan ``1..N`` next, one
test point per run (``scenario [machine] build``), ``ok`` or ``not ok``.
A run the ledger explains (a known difference) is ``not ok ... # TODO``
with the ledger keys, which TAP and meson count as an expected failure; a
skipped run, and one the build cannot start, is ``ok ... # SKIP`` with the
reason.  A failing point carries a YAML block (two-space indented,
``---`` to ``...``): the status, the decoded step, what differed and the
reproducer.  A check stopped on an internal error of sdqtest ends with
``Bail out!``.  Descriptions never hold ``#`` (meson reads the directive
from the first one), and every YAML scalar is a JSON string (valid YAML).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from harness.check.runner import CANNOT_RUN, QUIRK, SKIP, Result

#: The TAP version written on the first line.
VERSION = 14


def _text(s: str) -> str:
    """One line, ``#`` written ``%23`` (TAP 14 escapes it as ``\\#``, which meson
    does not read: it takes the first ``#`` as the directive)."""
    return " ".join(s.replace("#", "%23").split())


def describe(r: Result) -> str:
    """A point's description: ``scenario [machine] build``."""
    return _text(f"{r.scenario} [{r.machine}] {r.build}")


def _yaml(value: Any, indent: int) -> Iterator[str]:
    """``value`` (dict, list, str, int, bool) as YAML lines at ``indent``."""
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                yield f"{pad}{k}:"
                yield from _yaml(v, indent + 2)
            else:
                yield f"{pad}{k}: {_scalar(v)}"
    else:
        for v in value:
            yield f"{pad}- {_scalar(v)}"


def _scalar(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return "{}" if isinstance(v, dict) else "[]"
    return json.dumps(v) if isinstance(v, (str, bool, int)) or v is None else json.dumps(str(v))


def diagnostics(r: Result) -> dict[str, Any]:
    """The YAML block of a failing run: message, severity and the data a
    reader needs to see and replay the difference."""
    data: dict[str, Any] = {"status": r.status, "build": r.build, "machine": r.machine,
                            "group": r.group, "steps": r.steps}
    d = r.divergence
    if d is not None:
        data |= {"step": d.step.index, "kind": d.kind, "operation": d.step.describe(),
                 "signature": d.signature, "where": d.context, "differs": d.fields}
        if d.trace_file:
            data["reproducer"] = d.trace_file
    if r.spec_misses:
        data["spec_misses"] = r.spec_misses
    if len(r.differences) > 1:
        data["differences"] = len(r.differences)
    if r.internal:
        data["internal_error"] = True
        data["traceback"] = (r.notes[0] if r.notes else "").splitlines()[-3:]
    message = (r.reason.splitlines()[0] if r.reason else r.status)
    return {"message": message, "severity": "fail", "data": data}


@dataclass(frozen=True)
class Point:
    """One test point: ``ok``, its description, a ``SKIP`` or ``TODO``
    directive with its reason, and the YAML block of a failure."""

    ok: bool
    description: str
    directive: str = ""
    reason: str = ""
    diagnostics: dict[str, Any] | None = None

    def lines(self, n: int) -> list[str]:
        head = f"{'ok' if self.ok else 'not ok'} {n} - {_text(self.description)}"
        if self.directive:
            head += f" # {self.directive} {_text(self.reason)}"
        if not self.diagnostics:
            return [head]
        return [head, "  ---", *_yaml(self.diagnostics, 2), "  ..."]


def point(r: Result) -> Point:
    """The test point of check run ``r``."""
    if r.status in (SKIP, CANNOT_RUN):
        return Point(True, describe(r), "SKIP", r.reason or r.status)
    if r.status == QUIRK:
        keys = ", ".join(r.known_met()) or "ledger"
        return Point(False, describe(r), "TODO", f"known difference: {keys}")
    if r.ok:
        return Point(True, describe(r))
    return Point(False, describe(r), diagnostics=diagnostics(r))


def stream(points: Sequence[Point], bail: str = "") -> list[str]:
    """The whole TAP stream: version, plan, points; ``Bail out!`` and
    ``bail`` when the run stopped early."""
    out = [f"TAP version {VERSION}", f"1..{len(points)}"]
    for n, p in enumerate(points, 1):
        out += p.lines(n)
    if bail:
        out.append(f"Bail out! {_text(bail)}")
    return out


def lines(results: Sequence[Result], aborted: str = "") -> list[str]:
    """The check's TAP stream; ``aborted``: the traceback of a check that
    stopped on an internal error of sdqtest."""
    last = aborted.strip().splitlines()[-1] if aborted.strip() else "internal error"
    return stream([point(r) for r in results], f"the check stopped on an internal error "
                  f"of sdqtest: {last}" if aborted else "")


def write(results: Sequence[Result], dest: str, stdout: TextIO, aborted: str = "") -> None:
    """The check's TAP stream into file ``dest``, or on ``stdout`` (``-``)."""
    write_stream(lines(results, aborted), dest, stdout)


def write_stream(stream_lines: list[str], dest: str, stdout: TextIO) -> None:
    """``stream_lines`` into file ``dest``, or on ``stdout`` when ``dest`` is ``-``."""
    text = "\n".join(stream_lines) + "\n"
    if dest == "-":
        stdout.write(text)
        stdout.flush()
    else:
        Path(dest).write_text(text)
