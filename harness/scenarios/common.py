"""Helpers shared by scenarios."""

from __future__ import annotations

from harness import images
from harness.driver.host import HostDriver
from harness.scenarios.registry import Context
from harness.target import Target


def ready(t: Target, *, bus_width: int = 4) -> HostDriver:
    """A driver with the controller set up and the card in transfer state."""
    d = HostDriver(t)
    d.setup()
    d.init_card(bus_width=bus_width)
    return d


def expect_pattern(ctx: Context, data: bytes | None, first_block: int, what: str) -> None:
    """The data read equals the image recipe's pattern (an independent fact:
    the image was generated from it); nothing to expect on a user's image."""
    if not ctx.image:
        return
    want = images.recipe(ctx.image).expected(first_block * images.BLOCK, len(data or b""))
    ctx.expect(data == want, f"{what}: data read differs from the image's pattern")


def expect_bytes(ctx: Context, data: bytes | None, offset: int, what: str) -> None:
    """The data read equals the image recipe's content at byte ``offset``."""
    if not ctx.image:
        return
    want = images.recipe(ctx.image).expected(offset, len(data or b""))
    ctx.expect(bool(data) and data == want, f"{what}: data differs from the image's content")


def test_data(n: int, seed: int) -> bytes:
    """``n`` bytes no image holds, different for each ``seed``."""
    out = bytearray()
    x = (seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
        out += x.to_bytes(4, "little")
    return bytes(out[:n])
