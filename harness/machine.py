"""The machine under test, described once.

A :class:`Machine` says what QEMU is asked to build and what the model
mirrors: the machine type, the RAM size, the ``sdhci-pci`` controller and
the ``sd-card`` with their properties under QEMU's own names, the card's
backing image and where the controller's BAR0 is placed.  It is immutable
and round-trips through JSON, so a reproducer can carry it.

Neutral ground, like :mod:`harness.profile`: the QEMU side turns a Machine
into a command line (:func:`harness.qemu.argv.qemu_argv`), the model side
maps the properties to its own parameters
(:class:`harness.model.target.ModelTarget`); neither imports the other.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.hwdefs import boards

#: A device property value: QEMU takes text; ints and bools are spelled out
#: when the command line is written (``on``/``off`` for bools).
PropValue = str | int | bool

#: Version of the JSON shape written by :meth:`Machine.to_json`.
FORMAT = 1

#: Where BAR0 goes: inside the PCI hole of both pc and q35, above q35's MMCONFIG.
DEFAULT_BAR0 = 0xE000_0000
#: Default guest RAM.
DEFAULT_RAM = 128 << 20
#: QEMU ``id=`` of the controller, the card and the card's drive.
SDHCI_ID, CARD_ID, DRIVE_ID = "sdhci", "card", "sdcard"
#: Card devices that plug into sdhci-pci's SD bus, by QEMU type name: an SD
#: memory card, or an eMMC device (QEMU 9.1 and later).
CARD_KINDS = ("sd-card", "emmc")

_MIB = 1 << 20


class Props(Mapping[str, PropValue]):
    """Device properties by QEMU name: ordered, immutable, hashable."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, PropValue] | Iterable[tuple[str, PropValue]] = ()
                 ) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        out: dict[str, PropValue] = {}
        for k, v in pairs:
            if not isinstance(k, str) or not isinstance(v, str | int | bool):
                raise TypeError(f"device property {k!r}={v!r}: need a name and a str, "
                                "int or bool value")
            out[k] = v
        self._items: tuple[tuple[str, PropValue], ...] = tuple(out.items())

    def __getitem__(self, key: str) -> PropValue:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(frozenset(self._items))

    def __repr__(self) -> str:
        return f"Props({dict(self._items)!r})"


@dataclass(frozen=True)
class CardImage:
    """The card's backing image, as QEMU opens it.

    ``path`` is a file in ``format`` (``raw``, ``qcow2``, ...), never
    written by the harness (QEMU works on a copy or a snapshot); ``None``
    is QEMU's null block driver of ``size`` bytes (no file at all).
    ``readonly`` opens the drive read-only.  ``cache`` is the drive's cache
    mode (``none`` for a guest doing direct I/O); unset, a raw file takes
    QEMU's default and a container ``writethrough``.
    """

    path: Path | None = None
    format: str = "raw"
    readonly: bool = False
    size: int | None = None
    cache: str | None = None

    def __post_init__(self) -> None:
        if self.path is not None:
            object.__setattr__(self, "path", Path(self.path))
            if self.size is not None:
                raise ValueError("a card image is a file or a null-co size, not both")
        elif self.size is None or self.size <= 0:
            raise ValueError("a card image without a file needs a size (QEMU's null-co)")

    @classmethod
    def null(cls, size: int) -> CardImage:
        """No file: QEMU's ``null-co`` block driver of ``size`` bytes."""
        return cls(size=size)

    def to_json(self) -> dict[str, Any]:
        return {"path": None if self.path is None else str(self.path), "format": self.format,
                "readonly": self.readonly, "size": self.size, "cache": self.cache}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> CardImage:
        path = d.get("path")
        return cls(path=None if path is None else Path(path), format=str(d.get("format", "raw")),
                   readonly=bool(d.get("readonly", False)), size=d.get("size"),
                   cache=d.get("cache"))


def _check_board(m: Machine) -> None:
    """A board machine is the board's own: its type, controller and card slot."""
    try:
        b = boards.by_name(str(m.board))
    except KeyError as e:
        raise ValueError(str(e.args[0])) from None
    if m.type != b.machine:
        raise ValueError(f"board {b.name} is machine type {b.machine}, not {m.type}")
    if m.sdhci is None or m.card_kind != b.card_kind:
        raise ValueError(f"board {b.name} has its own {b.controller} and {b.card_kind} slot")


def _props_or_none(value: Mapping[str, PropValue] | None) -> Props | None:
    return None if value is None else Props(value)


@dataclass(frozen=True)
class Machine:
    """One machine under test: a PC with sdhci-pci and an SD card behind it.

    ``sdhci``/``card`` are the ``-device sdhci-pci``/``-device sd-card``
    properties by QEMU name; ``None`` leaves that device out (a bare machine,
    see :meth:`bare`).  ``card_kind`` is the card's QEMU device type, one of
    :data:`CARD_KINDS` (``emmc``: an eMMC device on the same bus).  ``image``
    is the card's drive (``None``: a card with no medium).  ``ram`` is in
    bytes, a whole number of MiB.
    """

    type: str = "q35"
    ram: int = DEFAULT_RAM
    sdhci: Mapping[str, PropValue] | None = field(default_factory=Props)
    card: Mapping[str, PropValue] | None = field(default_factory=Props)
    image: CardImage | None = None
    bar0: int = DEFAULT_BAR0
    card_kind: str = "sd-card"
    board: str | None = None

    def __post_init__(self) -> None:
        if self.board is not None:
            _check_board(self)
        if self.card_kind not in CARD_KINDS:
            raise ValueError(f"card kind {self.card_kind!r}: one of {', '.join(CARD_KINDS)}")
        object.__setattr__(self, "sdhci", _props_or_none(self.sdhci))
        object.__setattr__(self, "card", _props_or_none(self.card))
        if self.ram <= 0 or self.ram % _MIB:
            raise ValueError(f"RAM size {self.ram} is not a whole number of MiB")
        if self.card is not None and self.sdhci is None:
            raise ValueError(f"an {self.card_kind} needs the sdhci-pci controller's SD bus")
        if self.image is not None and self.card is None:
            raise ValueError("a card image needs an sd-card device")
        for props in (self.sdhci, self.card):
            if props is not None and ("id" in props or "drive" in props):
                raise ValueError("'id' and 'drive' are set by the machine description")

    @classmethod
    def for_board(cls, name: str, *, card: Mapping[str, PropValue] | None = None,
                  image: CardImage | None = None) -> Machine:
        """Board ``name``'s machine (:mod:`harness.hwdefs.boards`): its machine type
        and RAM, the controller properties the board sets (what the model
        mirrors; QEMU's board sets them itself), the board's own SD card with
        ``card`` properties (``-global sd-card.*``) on ``image``."""
        b = boards.by_name(name)
        return cls(type=b.machine, ram=b.ram, sdhci=b.sdhci_props,
                   card=Props() if card is None else card, image=image, bar0=b.base,
                   card_kind=b.card_kind, board=b.name)

    @property
    def board_def(self) -> boards.Board | None:
        """The board this machine is (:mod:`harness.hwdefs.boards`), if any."""
        return None if self.board is None else boards.by_name(self.board)

    @classmethod
    def bare(cls, type: str = "q35", ram: int = DEFAULT_RAM) -> Machine:
        """A machine without sdhci-pci or sd-card (probes, qtest benchmarks)."""
        return cls(type=type, ram=ram, sdhci=None, card=None)

    @property
    def sdhci_props(self) -> Props:
        """sdhci-pci's properties (empty when there is no controller)."""
        return self.sdhci if isinstance(self.sdhci, Props) else Props()

    @property
    def card_props(self) -> Props:
        """sd-card's properties (empty when there is no card device)."""
        return self.card if isinstance(self.card, Props) else Props()

    def replace(self, **changes: Any) -> Machine:
        """A copy with ``changes`` (dataclass fields)."""
        return replace(self, **changes)

    def with_image_path(self, path: Path) -> Machine:
        """The same machine with the card image read from ``path``."""
        if self.image is None:
            raise ValueError("this machine has no card image")
        return replace(self, image=replace(self.image, path=path))

    def resolved(self) -> Machine:
        """The same machine with an absolute image path."""
        if self.image is None or self.image.path is None:
            return self
        return self.with_image_path(Path(os.path.abspath(self.image.path)))

    # -- JSON -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out = {
            "format": FORMAT,
            "type": self.type,
            "ram": self.ram,
            "sdhci": None if self.sdhci is None else dict(self.sdhci),
            "card": None if self.card is None else dict(self.card),
            "image": None if self.image is None else self.image.to_json(),
            "bar0": self.bar0,
        }
        if self.card_kind != "sd-card":  # absent: an SD card, as before the key existed
            out["card_kind"] = self.card_kind
        if self.board is not None:  # absent: a PC with sdhci-pci
            out["board"] = self.board
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Machine:
        fmt = d.get("format", FORMAT)
        if fmt != FORMAT:
            raise ValueError(f"machine description format {fmt!r}; this sdqtest reads "
                             f"format {FORMAT}")
        image = d.get("image")
        return cls(
            type=str(d.get("type", "q35")),
            ram=int(d.get("ram", DEFAULT_RAM)),
            sdhci=d["sdhci"] if "sdhci" in d else Props(),  # null: no controller
            card=d["card"] if "card" in d else Props(),     # null: no card device
            image=None if image is None else CardImage.from_json(image),
            bar0=int(d.get("bar0", DEFAULT_BAR0)),
            card_kind=str(d.get("card_kind", "sd-card")),
            board=None if d.get("board") is None else str(d["board"]),
        )

    def dumps(self) -> str:
        """One line of JSON."""
        return json.dumps(self.to_json(), separators=(", ", ": "))

    @classmethod
    def loads(cls, text: str) -> Machine:
        return cls.from_json(json.loads(text))


#: How a reproducer trace's comment line names its machine (``sdqtest replay``
#: reads it back).
REPRODUCER_HEADER = "# machine: "


def reproducer_header(machine: Machine, what: str = "") -> str:
    """The comment lines that start a reproducer trace: ``what`` and the
    machine it was recorded on."""
    lines = [f"# {ln}" for ln in what.splitlines()] if what else []
    return "".join(f"{ln}\n" for ln in [*lines, REPRODUCER_HEADER + machine.dumps()])

