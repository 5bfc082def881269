"""A difference only a reused QEMU process shows, at ACMD22, is the ledger's
``sd.acmd22-count-survives-reset`` (``sd_reset`` leaves ``blk_written``:
PLS 4.3.9 makes ACMD22 the count of the last write command; a fresh launch
has 0), as a fresh launch agreeing proves; any other reuse-only difference
stays a divergence."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.check import runner
from harness.ledger import LEDGER
from harness.profile import NEWEST
from harness.qemu.builds import QemuBuild
from harness.scenarios import Context, Scenario
from harness.target import Target

ACMD22 = "result:BDATA.DATA | ACMD22 SEND_NUM_WR_BLOCKS | tran"
CMD17 = "result:BDATA.DATA | CMD17 READ_SINGLE_BLOCK | data"


def test_the_residue_is_named_by_the_command() -> None:
    assert set(runner.RESET_RESIDUE.values()) <= set(LEDGER)
    assert runner.reset_residue([ACMD22]) == "sd.acmd22-count-survives-reset"
    assert runner.reset_residue([ACMD22, ACMD22.replace("tran", "data")]) is not None
    assert runner.reset_residue([ACMD22, CMD17]) is None   # one difference elsewhere
    assert runner.reset_residue([CMD17]) is None
    assert runner.reset_residue([]) is None
    assert runner.reset_residue(["irq:level | no command | -"]) is None


def _results(reused_sigs: list[str], fresh_status: str) -> list[runner.Result]:
    diffs: Any = [SimpleNamespace(signature=s) for s in reused_sigs]
    reused = runner.Result("b", "explore-057", "explore", "raspi3b", runner.DIVERGE,
                           reason="read BDATA", differences=diffs, reused=True)
    fresh = runner.Result("b", "explore-057", "explore", "raspi3b", fresh_status)
    return [reused, fresh]


@pytest.mark.parametrize(("sigs", "fresh", "status"), [
    ([ACMD22], runner.AGREE, runner.QUIRK),
    ([CMD17], runner.AGREE, runner.DIVERGE),
    ([ACMD22], runner.ERROR, runner.DIVERGE),
])
def test_run_names_the_residue_only_at_its_command(
        monkeypatch: pytest.MonkeyPatch, sigs: list[str], fresh: str, status: str) -> None:
    results = _results(sigs, fresh)
    monkeypatch.setattr(runner, "_run", lambda *a, **k: results.pop(0))
    build = QemuBuild("fake", Path("/nonexistent"), NEWEST)

    def nothing(t: Target, ctx: Context) -> None:
        pass

    opts = runner.RunOptions(pool=SimpleNamespace())  # type: ignore[arg-type]
    res = runner.run(build, Scenario("explore-057", "explore", nothing), "raspi3b", opts)
    assert res.status == status
    if status == runner.QUIRK:
        assert res.known_met() == ["sd.acmd22-count-survives-reset"] and not res.differences
        assert any("fresh launch agrees" in n for n in res.notes)
    else:
        assert res.differences and res.reused
