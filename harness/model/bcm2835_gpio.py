"""The BCM2835 GPIO block as QEMU models it (``hw/gpio/bcm2835_gpio.c``): the function
select that routes the SD card to the SDHCI or the SDHOST.

GPFSEL0..5 (BCM2835 ARM Peripherals 6.1) hold three bits per pin; GPFSEL5
reads back its four pins (50-53) only.  After each GPFSEL write QEMU looks
at pins 48-53: all six input (function 0) moves the card to the SDHCI's
bus, all six ALT0 (4) to the SDHOST's, each only when the card is not
already there; any other mix (ALT3 included, the Arasan's function on the
chip, Linux ``emmc_gpio48``) leaves it where it is
(``bcm2835-gpio.routing-input-and-alt0``).  The device reset sets every
pin to input and puts the card on the SDHCI.  GPSETn/GPCLRn change GPLEVn
(no pin is wired to anything the SD path sees); the event, edge and pull
registers read 0 and drop writes, as does any other offset.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.hwdefs import bcm2835_sdhost as B

__all__ = ["Bcm2835Gpio"]

_PINS = 54
_SDHCI, _SDHOST = B.FSEL_INPUT, B.ALT0


class Bcm2835Gpio:
    """GPFSEL, GPSET/GPCLR/GPLEV; ``route(to_sdhost)`` moves the card."""

    def __init__(self, route: Callable[[bool], None]) -> None:
        self.route = route
        self.fsel = [0] * _PINS
        self.lev = [0, 0]
        self.sd_fsel = _SDHCI
        self.reset()

    def reset(self) -> None:
        """QEMU ``bcm2835_gpio_reset``: every pin input, the card on the SDHCI."""
        for reg in B.GPFSEL:
            self._fsel_set(reg.offset >> 2, 0)
        self.sd_fsel = _SDHCI
        self.route(False)
        self.lev = [0, 0]

    def _fsel_set(self, index: int, value: int) -> None:
        for i in range(10):
            pin = 10 * index + i
            if pin < _PINS:
                self.fsel[pin] = (value >> (3 * i)) & 7
        pins = {self.fsel[p] for p in B.SD_PINS}
        if self.sd_fsel != _SDHCI and pins == {_SDHCI}:
            self.sd_fsel = _SDHCI
            self.route(False)
        elif self.sd_fsel != _SDHOST and pins == {_SDHOST}:
            self.sd_fsel = _SDHOST
            self.route(True)

    def read(self, offset: int) -> int:
        """A register read at ``offset`` inside the GPIO block."""
        if offset <= B.GPFSEL[-1].offset and not offset & 3:
            base = 10 * (offset >> 2)
            return sum(self.fsel[base + i] << (3 * i) for i in range(10) if base + i < _PINS)
        if offset == B.GPLEV0.offset:
            return self.lev[0]
        if offset == B.GPLEV1.offset:
            return self.lev[1]
        return 0

    def write(self, offset: int, value: int) -> None:
        """A register write at ``offset`` inside the GPIO block."""
        if offset <= B.GPFSEL[-1].offset and not offset & 3:
            self._fsel_set(offset >> 2, value)
        elif offset in (B.GPSET0.offset, B.GPSET1.offset):
            bank = 0 if offset == B.GPSET0.offset else 1
            self.lev[bank] = (self.lev[bank] | value) & 0xFFFF_FFFF
        elif offset in (B.GPCLR0.offset, B.GPCLR1.offset):
            bank = 0 if offset == B.GPCLR0.offset else 1
            self.lev[bank] &= ~value & 0xFFFF_FFFF
