"""Erase (CMD32, CMD33, CMD38; PLS 4.3.5) and write protection (CMD28-30).

First and last block of the card, the inclusive end of the range, SDSC byte
addressing against SDHC block addressing, a range across a write-protected
group (SDSC only: the group is skipped and WP_ERASE_SKIP set), and, where a
build has the seed series' ``erase-blocks-as-zero`` property, both settings:
erased content, SCR DATA_STAT_AFTER_ERASE and CID PRV are compared.
"""

from __future__ import annotations

from harness.driver import host as D
from harness.driver.host import HostDriver
from harness.hwdefs import sd as S
from harness.scenarios.common import ready, test_data
from harness.scenarios.registry import Context, has_property, scenario
from harness.target import Target

SET_WRITE_PROT = 28
CLR_WRITE_PROT = 29


def _erase_and_look(t: Target, d: HostDriver, first: int, last: int, card_blocks: int) -> None:
    lo, hi = max(0, first - 1), min(card_blocks - 1, last + 1)
    d.write_blocks(lo, test_data(512 * (hi - lo + 1), first))
    d.erase(first, last)
    d.send_status()
    d.read_blocks(lo, hi - lo + 1)
    t.image_read(lo * 512, (hi - lo + 1) * 512)


def _card_blocks(d: HostDriver) -> int:
    return d.card.capacity // 512


for _image in ("sdsc-16m", "sdhc-4g"):

    @scenario(f"erase-ranges-{_image}", "erase", image=_image, needs_clock=True,
              variant=f"on the {_image} card")
    def _ranges(t: Target, ctx: Context) -> None:
        """Single block, inclusive end, first and last block of the card."""
        d = ready(t)
        n = _card_blocks(d)
        for first, last in ((100, 100), (200, 203), (0, 1), (n - 2, n - 1)):
            _erase_and_look(t, d, first, last, n)

    @scenario(f"erase-errors-{_image}", "erase", image=_image, needs_clock=True,
              variant=f"on the {_image} card")
    def _errors(t: Target, ctx: Context) -> None:
        """Out-of-sequence CMD38, CMD33 before CMD32, an end beyond the card
        (ERASE_SEQ_ERROR, OUT_OF_RANGE: PLS 4.3.5, 4.10.1)."""
        d = ready(t)
        n = _card_blocks(d)
        d.cmd(D.ERASE, 0)
        d.send_status()
        d.cmd(D.ERASE_WR_BLK_END, d.address(10))
        d.send_status()
        d.cmd(D.ERASE_WR_BLK_START, d.address(10))
        d.cmd(D.ERASE_WR_BLK_END, d.address(n + 5))
        d.cmd(D.ERASE, 0)
        d.send_status()
        d.cmd(D.ERASE_WR_BLK_START, d.address(20))
        d.cmd(D.ERASE_WR_BLK_END, d.address(10))  # end before start
        d.cmd(D.ERASE, 0)
        d.send_status()


    @scenario(f"erase-sequence-after-errors-{_image}", "erase", image=_image, needs_clock=True,
              variant=f"on the {_image} card")
    def _sequence(t: Target, ctx: Context) -> None:
        """What an erase that failed leaves for the next one (PLS 4.3.5:
        CMD38 needs CMD32 then CMD33 before it, else ERASE_SEQ_ERROR): an
        end beyond the card (OUT_OF_RANGE), then CMD32 and CMD38 without a
        CMD33, then CMD33 and CMD38 without a CMD32, then a whole sequence;
        CMD13 after each CMD38 and the blocks read back."""
        d = ready(t)
        n = _card_blocks(d)
        d.write_blocks(8, test_data(512 * 8, 8))
        d.cmd(D.ERASE_WR_BLK_START, d.address(10))
        d.cmd(D.ERASE_WR_BLK_END, d.address(n + 5))
        d.cmd(D.ERASE, 0)
        d.send_status()
        d.cmd(D.ERASE_WR_BLK_START, d.address(12))
        d.cmd(D.ERASE, 0)
        d.send_status()
        d.cmd(D.ERASE_WR_BLK_END, d.address(13))
        d.cmd(D.ERASE, 0)
        d.send_status()
        d.read_blocks(8, 8)
        d.erase(11, 12)
        d.send_status()
        d.read_blocks(8, 8)


@scenario("write-protect-groups", "erase", needs_clock=True)
def _wp(t: Target, ctx: Context) -> None:
    """CMD28 protects a group, CMD30 reports it, a write into it is refused
    (WP_VIOLATION), an erase across it skips it (WP_ERASE_SKIP), CMD29 lifts
    it (PLS 4.3.5, 4.3.14; SDSC only)."""
    d = ready(t)
    csd = d.card.csd_fields()
    sector = csd.get("SECTOR_SIZE", 0) + 1
    group = (csd.get("WP_GRP_SIZE", 0) + 1) * sector  # in write blocks
    blocks = group * (1 << csd.get("WRITE_BL_LEN", 9)) // 512
    g1 = blocks  # second group
    d.cmd(SET_WRITE_PROT, d.address(g1))
    d.send_write_prot(0)
    d.write_blocks(g1, test_data(512, 1))
    d.send_status()
    d.erase(g1 - 2, g1 + 2)
    d.send_status()
    d.read_blocks(g1 - 2, 4)
    d.cmd(CLR_WRITE_PROT, d.address(g1))
    d.send_write_prot(0)
    d.erase(g1 - 2, g1 + 2)
    d.read_blocks(g1 - 2, 4)


for _zero in (False, True):

    @scenario(f"erase-as-zero-{'on' if _zero else 'off'}", "erase", needs_clock=True,
              variant=f"with erase-blocks-as-zero={'on' if _zero else 'off'}",
              requires=(has_property("sd-card", "erase-blocks-as-zero"),),
              sd_card={"erase-blocks-as-zero": _zero})
    def _as_zero(t: Target, ctx: Context) -> None:
        """Erased blocks read 0x00 or 0xFF as the property says; SCR bit 55
        DATA_STAT_AFTER_ERASE and CID PRV tell the guest which (seed 000)."""
        d = ready(t)
        _erase_and_look(t, d, 40, 47, _card_blocks(d))
        ctx.note(f"SCR {d.card.scr or 0:#018x}, CID PRV "
                 f"{S.CID.decode(d.card.cid).get('PRV', 0):#x}")


@scenario("write-protect-multi-block", "erase", needs_clock=True)
def _wp_multi(t: Target, ctx: Context) -> None:
    """A multiple-block write that runs into a write-protected group: the
    blocks before it are written, the first protected block sets
    WP_VIOLATION and nothing more lands (PLS 4.3.5, 4.10.1 Table 4-42;
    SDSC only); CMD29 lifts the protection and the write goes through."""
    d = ready(t)
    csd = d.card.csd_fields()
    sector = csd.get("SECTOR_SIZE", 0) + 1
    group = (csd.get("WP_GRP_SIZE", 0) + 1) * sector  # in write blocks
    g1 = group * (1 << csd.get("WRITE_BL_LEN", 9)) // 512  # the second group
    d.cmd(SET_WRITE_PROT, d.address(g1))
    d.write_blocks(g1 - 2, test_data(4 * 512, 7))
    d.send_status()
    d.read_blocks(g1 - 2, 4)
    d.cmd(CLR_WRITE_PROT, d.address(g1))
    d.write_blocks(g1 - 2, test_data(4 * 512, 8))
    d.read_blocks(g1 - 2, 4)
