"""A board's SD controller under qtest: where its interrupt line is watched.

A board (:mod:`harness.hwdefs.boards`) puts its controller at a fixed MMIO
base, so there is no bus to program; what the QEMU side must do is find the
device whose GPIO qtest intercepts and intercept it.  ``irq_intercept_in``
takes an interrupt controller's unnamed inputs (the line is then the input
number), ``irq_intercept_out PATH sysbus-irq`` the controller's own output
(line 0).  QEMU 7.2's qtest skips named GPIO lists and still answers ``OK``,
so an ``out`` route is refused on builds older than the board says.
"""

from __future__ import annotations

import re

from harness.hwdefs.boards import Board, by_name
from harness.machine import Machine
from harness.qemu.session import QemuError, QemuSession

__all__ = ["BoardError", "by_name", "find_by_type", "other_ram_ranges", "ram_ranges",
           "watch_irq"]

#: QOM containers searched for a device of a given type (one ``qom-list`` each).
_ROOTS = ("/machine/unattached", "/machine/soc", "/machine")
_CHILD = re.compile(r"child<(.+)>")


class BoardError(QemuError):
    """The board QEMU built is not the one described, or qtest cannot watch it."""


def find_by_type(session: QemuSession, qom_type: str) -> str:
    """QOM path of the first child of :data:`_ROOTS` of QOM type ``qom_type``."""
    for root in _ROOTS:
        try:
            children = session.qmp_cmd("qom-list", path=root)
        except QemuError:
            continue
        for c in children:
            m = _CHILD.fullmatch(str(c.get("type", "")))
            if m and m.group(1) == qom_type:
                return f"{root}/{c['name']}"
    raise BoardError(f"no {qom_type} device under {', '.join(_ROOTS)}")


def ram_ranges(machine: Machine) -> tuple[tuple[int, int], ...]:
    """A board machine's guest RAM as ``(start, end)``, its on-chip memories
    included (empty for a PC)."""
    b = machine.board_def
    return () if b is None else ((b.ram_base, b.ram_base + machine.ram),
                                 *other_ram_ranges(machine))


def other_ram_ranges(machine: Machine) -> tuple[tuple[int, int], ...]:
    """A board machine's on-chip memories as ``(start, end)``: RAM the board
    allocates itself, outside the backend file the pool zeroes."""
    b = machine.board_def
    return () if b is None else tuple((base, base + n) for base, n in b.other_ram)


def _controller_path(session: QemuSession, board: Board, nth: int = 0) -> str:
    """QOM path of the board's controller when the board leaves it unnamed: the
    first-created device of its type under ``/machine/unattached`` (QEMU numbers
    those ``device[N]`` in creation order, and a board creates its controllers
    in address order: hw/arm/exynos4210.c SDHCI0 first), or the ``nth``."""
    children = session.qmp_cmd("qom-list", path="/machine/unattached")
    found = []
    for c in children:
        m = _CHILD.fullmatch(str(c.get("type", "")))
        n = re.fullmatch(r"device\[(\d+)\]", str(c.get("name", "")))
        if m and n and m.group(1) == board.irq.qom_type:
            found.append((int(n.group(1)), f"/machine/unattached/{c['name']}"))
    if len(found) <= nth:
        raise BoardError(f"board {board.name}: no {board.irq.qom_type} number {nth} in "
                         "/machine/unattached")
    return sorted(found)[nth][1]


def _version(session: QemuSession) -> tuple[int, int]:
    q = session.qmp_cmd("query-version")["qemu"]
    return int(q["major"]), int(q["minor"])


def watch_irq(session: QemuSession, board: Board) -> int:
    """Intercept ``board``'s controller interrupt; returns the qtest IRQ number
    its level is reported under."""
    route = board.irq
    qtest = session.qtest
    if route.kind == "in":
        path = (_controller_path(session, board, route.nth) if route.nth
                else find_by_type(session, route.qom_type))
        qtest.irq_intercept_in(path)
        return route.line
    version = _version(session)
    if version < route.min_version:
        have = ".".join(map(str, version))
        need = ".".join(map(str, route.min_version))
        raise BoardError(
            f"board {board.name}: QEMU {have}'s qtest cannot intercept the named GPIO "
            f"output {route.name} of {route.qom_path} (needs {need} or later)")
    path = route.qom_path or _controller_path(session, board)
    answer = qtest.command(f"irq_intercept_out {path} {route.name}")
    if not str(answer).startswith("OK"):
        raise BoardError(f"board {board.name}: irq_intercept_out answered {answer!r}")
    return route.line
