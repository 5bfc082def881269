"""Both targets refuse the same misuse with the same error type, and agree
on what is not misuse (an access outside the register window, a value
wider than the access)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import errors
from harness.hwdefs import sdhci as H
from harness.machine import CardImage, Machine
from harness.model.target import ModelTarget
from harness.pytest_plugin import selected_builds
from harness.qemu.target import QemuTarget
from harness.target import Target


@pytest.fixture(params=["model", pytest.param("qemu", marks=pytest.mark.qemu)])
def target(request: pytest.FixtureRequest, card_image: Path) -> Iterator[Target]:
    if request.param == "model":
        yield ModelTarget(Machine(image=CardImage(card_image)), image=card_image)
        return
    found = selected_builds(request.config)
    if not found:
        pytest.skip("no QEMU build: run 'sdqtest qemu install' or pass --sdq-qemu PATH")
    b = found[-1]
    with QemuTarget(b.binary, Machine(image=CardImage(card_image)), name=b.name) as t:
        yield t


MISUSE: list[tuple[str, Callable[[Target], object], type[errors.TargetError]]] = [
    ("read size 3", lambda t: t.read(0, 3), errors.AccessSizeError),
    ("read size 0", lambda t: t.read(0x40, 0), errors.AccessSizeError),
    ("write size 16", lambda t: t.write(0x08, 16, 0), errors.AccessSizeError),
    ("read far above the window", lambda t: t.read(1 << 48, 4), errors.OffsetError),
    ("write far below the window", lambda t: t.write(-(1 << 31) - 4, 4, 0),
     errors.OffsetError),
    ("mem_read a negative address", lambda t: t.mem_read(-16, 4), errors.AddressError),
    ("mem_read past 2**64", lambda t: t.mem_read((1 << 64) - 2, 4), errors.AddressError),
    ("mem_write a negative address", lambda t: t.mem_write(-4096, b"x"), errors.AddressError),
    ("mem_write at 2**64", lambda t: t.mem_write(1 << 64, b"x"), errors.AddressError),
    ("mem_read a negative length", lambda t: t.mem_read(0x1000, -1), errors.AddressError),
    ("clock_step backwards", lambda t: t.clock_step(-1), errors.ClockStepError),
]


@pytest.mark.parametrize("what,call,error", MISUSE, ids=[m[0] for m in MISUSE])
def test_same_misuse_same_error(target: Target, what: str,
                                call: Callable[[Target], object],
                                error: type[errors.TargetError]) -> None:
    with pytest.raises(error) as ei:
        call(target)
    assert isinstance(ei.value, errors.TargetError) and isinstance(ei.value, ValueError)
    assert target.read(H.HCVER.offset, 2) != 0, f"{what}: the target still works"


def test_outside_the_window_reads_zero_and_drops_writes(target: Target) -> None:
    for off, size in ((0x100, 4), (0x1000, 8), (-16, 4), (1 << 40, 2)):
        target.write(off, size, (1 << (8 * size)) - 1)
        assert target.read(off, size) == 0, f"{off:#x}/{size}"


def test_a_value_wider_than_the_access_is_truncated(target: Target) -> None:
    target.write(H.ARGUMENT.offset, 4, 0x1_2345_6789)
    assert target.read(H.ARGUMENT.offset, 4) == 0x2345_6789
    target.write(H.ARGUMENT.offset, 2, -1)
    assert target.read(H.ARGUMENT.offset, 4) == 0x2345_FFFF
