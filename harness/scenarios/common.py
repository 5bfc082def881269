"""Helpers shared by scenarios."""

from __future__ import annotations

from typing import Any

from harness import images
from harness.driver.host import HostDriver
from harness.hwdefs import sd as S
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


def expect_identified(ctx: Context, r: dict[str, Any], rca: int) -> None:
    """A board driver's card identification (PLS 4.2) as the spec wants it:
    ``r`` its ``init()`` answers by command (``cmd8``, ``acmd41``, ``cmd3``),
    ``rca`` the address the card published."""
    ctx.expect(r["cmd8"].r1 & 0xFFF == 0x1AA, f"CMD8: R7 {r['cmd8'].r1:#x} does not echo "
               "0x1AA (PLS 4.3.13)")
    ctx.expect(bool(r["acmd41"].r1 & S.OCR_BUSY), "ACMD41: the card never left busy")
    ctx.expect(r["cmd3"].ok and rca != 0, "CMD3: no RCA published (PLS 4.2.2)")
