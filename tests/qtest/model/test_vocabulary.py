"""The SDHCI register map is declared once, in harness.hwdefs.sdhci.

These tests fail when a second declaration creeps back in: a hand-typed
bit constant next to the table, a reserved mask or offset typed into the
model, a register dispatched by a bare offset.
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.hwdefs import sdhci as H
from harness.hwdefs.fields import Access
from harness.model import sdhci as model_sdhci
from harness.model import sdhci_dma, sdhci_state

#: hwdefs.sdhci names that may be plain numbers: they are not register bits
#: (response type values, ADMA descriptor attributes and sizes, device
#: property defaults, the window size).
_NOT_REGISTER_BITS = {
    "REGISTER_WINDOW", "RSP_NONE", "RSP_136", "RSP_48", "RSP_48_BUSY",
    "ADMA_VALID", "ADMA_END", "ADMA_INT", "ADMA_ACT_MASK", "ADMA_ACT_NOP", "ADMA_ACT_RSV",
    "ADMA_ACT_SET", "ADMA_ACT_TRAN", "ADMA_ACT_LINK", "ADMA1_DESC_SIZE",
    "ADMA2_32_DESC_SIZE", "ADMA2_64_DESC_SIZE", "CAPAREG_DEFAULT", "MAXCURR_DEFAULT",
    "SD_SPEC_VERSION_DEFAULT", "HCVER_VENDOR", "VENDOR_FSL",
}

#: Model module-level numbers that are not register facts.
_MODEL_NUMBERS = {
    "U8", "U16", "U32", "U64", "NOT_STOPPED", "GAP_READ", "GAP_WRITE", "TRANSFER_DELAY_NS",
    "ADMA_DESCS_PER_STEP", "DEFAULT_STEP_BUDGET", "INSERTION_DELAY_NS",
}


def _module_number_constants(path: Path) -> dict[str, int]:
    """Module-level names bound to integer literals (``X = 0x10``, ``A, B = 1, 2``)."""
    out: dict[str, int] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        for target in targets:
            pairs: list[tuple[ast.expr, ast.expr]] = [(target, value)]
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                pairs = list(zip(target.elts, value.elts, strict=True))
            for t, v in pairs:
                if (isinstance(t, ast.Name) and isinstance(v, ast.Constant)
                        and type(v.value) is int):
                    out[t.id] = v.value
    return out


def test_hwdefs_bit_constants_come_from_the_table() -> None:
    typed = set(_module_number_constants(Path(H.__file__)))
    assert typed <= _NOT_REGISTER_BITS, sorted(typed - _NOT_REGISTER_BITS)


def test_model_types_no_register_masks() -> None:
    for module in (model_sdhci, sdhci_state, sdhci_dma):
        typed = set(_module_number_constants(Path(module.__file__)))
        assert typed <= _MODEL_NUMBERS, (module.__name__, sorted(typed - _MODEL_NUMBERS))


def test_model_dispatch_covers_the_register_map() -> None:
    """Every register a guest can write (RW, RW1C or WO fields) has a writer
    for its word; readers and writers are keyed by the table's registers."""
    assert set(model_sdhci.READERS) <= set(H.REGISTERS)
    assert set(model_sdhci.WRITERS) <= set(H.REGISTERS)
    written: set[int] = set()
    for reg in model_sdhci.WRITERS:
        written.update(range(reg.offset, reg.offset + max(reg.width, 4)))
    for reg in H.REGISTERS:
        if any(f.access in (Access.RW, Access.RW1C, Access.WO) for f in reg.fields):
            assert reg.offset in written, reg.name


def test_reserved_masks_follow_the_spec_versions() -> None:
    """Clock Control bits 7:5 and the tuning interrupt bits came with 3.00;
    Host Control 2 is a 3.00 register (Host Version 4 Enable is 4.10)."""
    assert (H.CLKCON.reserved(2), H.CLKCON.reserved(3)) == (0x00F8, 0x0018)
    assert (H.NORINTSTSEN.reserved(2), H.NORINTSTSEN.reserved(3)) == (0xF000, 0xE000)
    assert (H.ERRINTSIGEN.reserved(2), H.ERRINTSIGEN.reserved(3)) == (0x0C00, 0x0800)
    assert (H.HOSTCTL2.reserved(2), H.HOSTCTL2.reserved(3)) == (0xFFFF, 0x3F00)
    assert H.HOSTCTL2.reserved(4) == 0x2F00
    assert H.CMDREG.reserved() == 0xC004
