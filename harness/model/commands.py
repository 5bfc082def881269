"""A card's command table: QEMU's side of each command of one protocol.

QEMU's sd-card and emmc share one dispatcher over a per-protocol table
(``SDProto``): a row per command index with its class and a handler.  The
model does the same.  A :class:`CommandTable` holds the rows of one
protocol (:data:`harness.model.sd_commands.SD`,
:data:`harness.model.emmc_commands.EMMC`) and the handlers bound to them by
:meth:`CommandTable.handles`; :meth:`harness.model.sdcard.SDCard._normal_command`
and ``_app_command`` dispatch through the card's table.  A row's spec side
(name, class, type, response) is a :class:`~harness.hwdefs.sd.SpecCommand`
of the hwdefs, stated once there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from harness.hwdefs.sd import SpecCommand


class Rsp(Enum):
    """What a handler answers (QEMU's ``sd_rsp_type_t`` in SD mode)."""

    R0 = "none"
    R1 = "R1"
    R1B = "R1b"
    R2_CID = "R2 CID"
    R2_CSD = "R2 CSD"
    R3 = "R3"
    R6 = "R6"
    R7 = "R7"
    ILLEGAL = "illegal"


class Support(Enum):
    """How the model (like QEMU) answers a command."""

    IMPLEMENTED = "implemented"
    OPTIONAL = "optional, not implemented: illegal command"
    UNIMPLEMENTED = "recognised, not implemented: illegal command"
    RESERVED = "reserved / other specification: illegal command"
    SECURITY = "SD security (Part 3), not implemented: illegal command"
    VERSION = "depends on the QEMU version (see note)"


#: A command handler: an unbound card method taking the argument.
Handler = Callable[[Any, int], Rsp]
_H = TypeVar("_H", bound=Callable[..., Rsp])


def illegal(card: object, arg: int) -> Rsp:
    """The handler of every command the card does not implement."""
    return Rsp.ILLEGAL


@dataclass(frozen=True)
class CommandRow:
    """QEMU's side of one command; the spec's side is ``spec``."""

    spec: SpecCommand
    support: Support
    note: str = ""
    #: QEMU's table has an entry (QEMU >= 9.1; a locked card accepts only
    #: commands with one)
    in_proto: bool = True
    qemu_cls: int | None = None  #: QEMU's class where it differs from the spec's

    @property
    def index(self) -> int:
        return self.spec.index

    @property
    def app(self) -> bool:
        return self.spec.app

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def cls(self) -> int:
        """The class in QEMU's table (0 where QEMU has no entry)."""
        if self.qemu_cls is not None:
            return self.qemu_cls
        return self.spec.cls or 0


class CommandTable:
    """The commands and application commands of one protocol, and the
    card methods bound to them.  An index without a row is unknown: no
    response and ILLEGAL_COMMAND, like a row without a handler."""

    def __init__(self, name: str, commands: Iterable[CommandRow],
                 app_commands: Iterable[CommandRow] = (),
                 legacy_classes: tuple[int, ...] | None = None) -> None:
        self.name = name
        self.cmd: dict[int, CommandRow] = {r.index: r for r in commands}
        self.acmd: dict[int, CommandRow] = {r.index: r for r in app_commands}
        #: QEMU < 9.1's fixed class table, where the protocol had one
        self.legacy_classes = legacy_classes
        self._handlers: dict[tuple[bool, int], Handler] = {}

    def rows(self, *, app: bool = False) -> dict[int, CommandRow]:
        return self.acmd if app else self.cmd

    def handler(self, row: CommandRow) -> Handler:
        """The method bound to ``row``, or :func:`illegal`."""
        return self._handlers.get((row.app, row.index), illegal)

    def handles(self, index: int, *, app: bool = False) -> Callable[[_H], _H]:
        """Bind the decorated card method as the handler of CMD``index`` (or
        ACMD``index``): the row must exist, be implemented or
        version-dependent, and have no handler yet."""
        self._implementable(index, app)

        def bind(fn: _H) -> _H:
            self._bind(index, app, fn)
            return fn
        return bind

    def inherit(self, card: type, table: CommandTable, *indices: int,
                app: bool = False) -> None:
        """Bind to CMD``indices`` (ACMD with ``app``) the handlers ``table``
        has for them (QEMU's protocols share ``sd_cmd_*`` functions).
        ``card`` must not override an inherited method: an override is bound
        with :meth:`handles`."""
        kind = "ACMD" if app else "CMD"
        for index in indices:
            fn = table._handlers.get((app, index))
            if fn is None:
                raise ValueError(f"{table.name} {kind}{index} has no handler to inherit")
            if getattr(card, fn.__name__) is not fn:
                raise ValueError(f"{card.__name__}.{fn.__name__} overrides the "
                                 f"{table.name} handler of {kind}{index}: bind it with "
                                 "handles()")
            self._implementable(index, app)
            self._bind(index, app, fn)

    def _implementable(self, index: int, app: bool) -> None:
        row = self.rows(app=app).get(index)
        if row is None or row.support not in (Support.IMPLEMENTED, Support.VERSION):
            raise ValueError(f"{self.name} {'A' if app else ''}CMD{index} has no row to implement")

    def _bind(self, index: int, app: bool, fn: Handler) -> None:
        if (app, index) in self._handlers:
            raise ValueError(f"{self.name} {'A' if app else ''}CMD{index} already has a handler")
        self._handlers[(app, index)] = fn
