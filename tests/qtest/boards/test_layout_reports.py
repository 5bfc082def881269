"""A divergence on a board whose controller is no SDHCI is reported in that
controller's names: the step line, the decoded fields and the finding's
signature name the register (and its fields) of the PL181, Allwinner or
BCM2835 SDHOST layout (:mod:`harness.hwdefs.layouts`), never the SDHCI
register at the same offset.

Each test breaks the model deliberately (as the divergence report test of
the SDHCI does) in a way the controller's manual or driver names: the
status register's bit the broken model gets wrong must come out by name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.check import boards as check_boards
from harness.check import runner
from harness.check.lockstep import Divergence
from harness.hwdefs import allwinner as A
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import boards, sdhci
from harness.hwdefs import pl181 as P
from harness.model import allwinner as model_sunxi
from harness.model import bcm2835_sdhost as model_sdhost
from harness.model import pl181 as model_pl181
from harness.qemu.builds import QemuBuild
from harness.qemu.pool import QemuPool
from harness.scenarios import all_scenarios

pytestmark = pytest.mark.qemu

#: Every SDHCI register name: none may appear in a non-SDHCI board's report.
_SDHCI_NAMES = {r.name for r in sdhci.REGISTERS}


@pytest.fixture(scope="module")
def pool() -> Iterator[QemuPool]:
    with QemuPool() as p:
        yield p


def _diverge(build: QemuBuild, board: str, scenario: str, pool: QemuPool) -> Divergence:
    b = boards.by_name(board)
    if not build.offers(b.machine):
        pytest.skip(f"QEMU {build.name} has no machine type {b.machine}")
    why = check_boards.board_only_reason(b, build.profile)
    if why is not None:  # the check skips the board on this build (its IRQ route)
        pytest.skip(why)
    machine = b.machine
    res = runner.run(build, all_scenarios()[scenario], machine, runner.RunOptions(pool=pool))
    assert res.status == runner.DIVERGE, res.reason
    assert res.divergence is not None
    return res.divergence


def _assert_named(d: Divergence, register: str, field: str, offset: int) -> None:
    """The step line, the decoded fields, the signature and the JSON name
    ``register`` (at window offset ``offset``) and its ``field``; no SDHCI
    register appears in any of them."""
    assert d.kind == "result" and d.step.op == "read", d.render()
    line = d.step.describe()
    assert f"{register}@{offset:#04x}/" in line, line
    assert d.fields and d.fields[0].startswith(f"{register}: model {register}="), d.fields
    assert any(f.strip().startswith(f"{field}: model ") for f in d.fields), d.fields
    what = d.signature.split(" | ", 1)[0]
    assert what.startswith(f"result:{register}.") and field in what, d.signature
    text = "\n".join([d.render(), d.signature, str(d.to_json())])
    named = {w.strip("+.,:[]()@'\"") for w in text.replace("+", " ").replace(".", " ").split()}
    assert not named & _SDHCI_NAMES, sorted(named & _SDHCI_NAMES)


def test_pl181_divergence_names_mcistatus(arm_build: QemuBuild, pool: QemuPool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """DataBlockEnd kept to real block ends (the TRM's rule, not QEMU's:
    ledger pl181.data-block-end-at-data-end): MCIStatus.DataBlockEnd differs."""
    monkeypatch.setattr(model_pl181, "_DATA_DONE", P.MCISTATUS.mask("DataEnd"))
    d = _diverge(arm_build, "vexpress-a9", "mmci-read-single", pool)
    _assert_named(d, "MCIStatus", "DataBlockEnd", P.mmci(P.MCISTATUS))


def test_sunxi_divergence_names_sd_star(arm_build: QemuBuild, pool: QemuPool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """SD_STAR showing an empty FIFO while the card's data is in it (H3
    Datasheet 5.3.7, SD_STAR FIFO_EMPTY): SD_STAR's FIFO fields differ."""
    monkeypatch.setattr(model_sunxi, "FIFO_LEVEL_1", model_sunxi.FIFO_EMPTY)
    d = _diverge(arm_build, "orangepi-pc", "sunxi-pio-read", pool)
    _assert_named(d, "SD_STAR", "FIFO_EMPTY", A.SD_STAR.offset)


def test_sdhost_divergence_names_sdhsts(arm_build: QemuBuild, pool: QemuPool,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that never sets DATA_FLAG when a word moves through the FIFO
    (Linux ``SDHSTS_DATA_FLAG``: data or space available): SDHSTS.DATA_FLAG
    differs at the driver's first status read of the transfer."""
    monkeypatch.setattr(model_sdhost, "_DATA_FLAG", 0)
    d = _diverge(arm_build, "raspi2b", "sdhost-read-single", pool)
    _assert_named(d, "SDHSTS", "DATA_FLAG", B.host(B.SDHSTS))
