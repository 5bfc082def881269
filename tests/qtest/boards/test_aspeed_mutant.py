"""The Aspeed wrapper's mutant ``aspeed-info-reset-sticks`` (``sdqtest
mutants``: a write to SDC_INFO keeps the software reset bit) is caught by
``aspeed-wrapper-registers``: the model paired with a model broken the same
way diverges at the read of SDC_INFO after the write (the RESET bit reads
back 0: QEMU's aspeed_sdhci.c, as Linux's sdhci-of-aspeed.c expects)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.check.lockstep import Divergence, LockstepTarget
from harness.hwdefs import aspeed as A
from harness.hwdefs import boards
from harness.machine import Machine
from harness.model.sdhci_aspeed import AspeedSdhci
from harness.model.target import ModelTarget
from harness.profile import NEWEST
from harness.scenarios import Context, all_scenarios

#: An ARM build of the newest release the model knows (every board's machine).
ARM = replace(NEWEST, machine_types=tuple(b.machine for b in boards.BOARDS))


def _model(broken: bool) -> ModelTarget:
    t = ModelTarget(Machine.for_board("ast2600"), profile=ARM, size=16 << 20)
    host = t.sdhci
    assert isinstance(host, AspeedSdhci) and host.wrapper is not None
    if broken:
        wrapper = host.wrapper
        write = wrapper.write

        def keeps_reset(offset: int, size: int, value: int) -> None:
            write(offset, size, value)
            if offset == A.SDC_INFO.offset:
                wrapper.regs[offset] = value

        wrapper.write = keeps_reset  # type: ignore[method-assign]
    return t


def test_the_scenario_agrees_model_against_model() -> None:
    ctx = Context(profile=ARM, machine="ast2600-evb", image="sdsc-16m")
    all_scenarios()["aspeed-wrapper-registers"].fn(
        LockstepTarget(_model(False), _model(False)), ctx)


def test_the_mutant_is_caught_model_against_model() -> None:
    ctx = Context(profile=ARM, machine="ast2600-evb", image="sdsc-16m")
    with pytest.raises(Divergence) as e:
        all_scenarios()["aspeed-wrapper-registers"].fn(
            LockstepTarget(_model(False), _model(True)), ctx)
    assert e.value.step.op == "read" and e.value.step.args[0] == -A.SLOT_STRIDE
