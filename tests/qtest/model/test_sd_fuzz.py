"""Random command/data sequences never raise and keep the card's invariants."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from harness.hwdefs import sd as S
from harness.model.clock import VirtualClock
from harness.model.sdcard import CardState, SDCard
from harness.profile import BuildProfile

PROFILES = (
    BuildProfile((7, 2, 0), (), {"spec_version": "2"}),
    BuildProfile((10, 0, 13), (), {"spec_version": "3"}),
    BuildProfile((11, 1, 3), (), {"spec_version": "3"}),
    BuildProfile((11, 1, 50), (), {"spec_version": "3", "erase-blocks-as-zero": "true"}),
)
SIZES = (0, 1 << 16, 1 << 20, 8 << 20, 2 << 30, 4 << 30)
INTERESTING_CMDS = (0, 2, 3, 6, 7, 8, 9, 10, 12, 13, 15, 16, 17, 18, 19, 23, 24, 25, 26, 27,
                    28, 29, 30, 32, 33, 38, 42, 55, 56)


class CardMachine(RuleBasedStateMachine):
    card: SDCard
    clock: VirtualClock
    size: int

    @initialize(profile=st.sampled_from(PROFILES), size=st.sampled_from(SIZES),
                strict=st.booleans())
    def setup(self, profile: BuildProfile, size: int, strict: bool) -> None:
        self.clock = VirtualClock()
        self.card = SDCard(self.clock, size=size, profile=profile, strict=strict)
        self.size = self.card.size

    @rule()
    def bring_up(self) -> None:
        c = self.card
        c.do_command(0, 0)
        c.do_command(8, 0x1AA)
        c.do_command(55, 0)
        c.do_command(41, 0x40FF8000)
        c.do_command(2, 0)
        c.do_command(3, 0)
        c.do_command(7, c.rca << 16)

    @rule(cmd=st.sampled_from(INTERESTING_CMDS) | st.integers(0, 127),
          arg=st.sampled_from((0, 1, 0x1AA, 0x40FF8000, 511, 512, 0xFFFFFFFF))
          | st.integers(0, 0xFFFFFFFF),
          use_rca=st.booleans())
    def command(self, cmd: int, arg: int, use_rca: bool) -> None:
        if use_rca:
            arg = (self.card.rca << 16) | (arg & 0xFFFF)
        r = self.card.do_command(cmd, arg)
        assert len(r) in (0, 4, 16)

    @rule(cmd=st.sampled_from((6, 13, 22, 23, 41, 42, 51, 18, 17)),
          arg=st.integers(0, 0xFFFFFFFF))
    def app_command(self, cmd: int, arg: int) -> None:
        self.card.do_command(55, self.card.rca << 16)
        self.card.do_command(cmd, arg)

    @rule(data=st.binary(max_size=600))
    def write(self, data: bytes) -> None:
        self.card.write_data(data)

    @rule(n=st.integers(0, 600))
    def read(self, n: int) -> None:
        out = self.card.read_data(n)
        assert len(out) == n

    @rule(ns=st.integers(0, 1_000_000))
    def step(self, ns: int) -> None:
        self.clock.step(ns)

    @rule()
    def reset(self) -> None:
        self.card.reset()

    @invariant()
    def card_invariants(self) -> None:
        c = self.card
        assert isinstance(c.state, CardState)
        assert c.size == self.size
        if c.store is not None:
            assert c.store.size == self.size
        assert 0 <= c.card_status <= 0xFFFFFFFF
        assert 0 <= c.rca <= 0xFFFF
        assert len(c.cid) == 16 and len(c.csd) == 16 and len(c.scr) == 8
        assert c.cid[15] == (S.crc7(c.cid[:15]) << 1) | 1
        assert c.data_ready() == (c.state is CardState.DATA)
        assert c.receive_ready() == (c.state is CardState.RCV)
        assert 0 <= c.blk_len <= 512


CardMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSdCardMachine = CardMachine.TestCase
