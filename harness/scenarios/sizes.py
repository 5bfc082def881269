"""Card sizes and capacity classes: SDSC 1 GiB, SDHC 4 GiB, SDXC 64 GiB
(sparse images).  CSD version, OCR CCS, byte against block addressing, and
the first and last blocks of the card (PLS 5.3, 4.3.14)."""

from __future__ import annotations

from harness.scenarios.common import expect_pattern, ready, test_data
from harness.scenarios.registry import Context, scenario
from harness.target import Target

for _image in ("sdsc-1g", "sdhc-4g", "sdxc-64g"):

    @scenario(f"capacity-{_image}", "sizes", image=_image, needs_clock=True,
              variant=f"on the {_image} card")
    def _capacity(t: Target, ctx: Context) -> None:
        """Init, read the first and last blocks, write the last, read past
        the end (OUT_OF_RANGE / ADDRESS_ERROR)."""
        d = ready(t)
        n = d.card.capacity // 512
        expect_pattern(ctx, d.read_blocks(0, 2).data, 0, "first blocks")
        expect_pattern(ctx, d.read_blocks(n - 2, 2).data, n - 2, "last blocks")
        d.write_blocks(n - 1, test_data(512, n))
        d.read_blocks(n - 1, 1)
        d.read_blocks(n, 1)
        d.send_status()
        d.read_blocks(n - 1, 2)
        d.send_status()
