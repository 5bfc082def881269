"""Regressions in areas no hand-written scenario names (issue #19's proof).

Written down before the model-driven exploration (``sdqtest explore``)
existed and kept out of its tuning: each is a small ``hw/sd`` change in a
corner of the devices that no scenario of the library is about (the Force
Event register, ADMA Error Status written by the guest, ACMD22's count,
CMD15 from the transfer state, ACMD42's state check, CMD13's RCA check).
The proof builds each into a QEMU 10.2.2 tree and runs the *default*
``sdqtest check`` on it, before and after the explore group existed: the
check arguments are empty on purpose.  Same form as :data:`mutants.MUTANTS`
(anchor + replacement, never the tree's own text beyond the anchor).
"""

from __future__ import annotations

from harness.bisect.mutants import Mutant

_WHY = "a regression no scenario names (#19 goal 5)"

UNNAMED: tuple[Mutant, ...] = (
    Mutant("feaer-ignores-status-enable",
           _WHY, "hw/sd/sdhci.c",
           "s->errintsts |= (value >> 16) & s->errintstsen;",
           "s->errintsts |= (value >> 16);",
           (), "ERRINTSTS"),
    Mutant("acmd22-counts-single-write-twice",
           _WHY, "hw/sd/sd.c",
           "sd->blk_written ++;",
           "sd->blk_written += 2;",
           (), "ACMD22"),
    Mutant("cmd15-refused-in-transfer-state",
           _WHY, "hw/sd/sd.c",
           "    case sd_standby_state:\n    case sd_transfer_state:\n"
           "    case sd_sendingdata_state:\n    case sd_receivingdata_state:\n"
           "    case sd_programming_state:\n    case sd_disconnect_state:\n"
           "        break;\n    default:\n        return sd_invalid_state_for_cmd(sd, req);\n"
           "    }\n    if (sd_req_rca_same(sd, req)) {\n        sd->state = sd_inactive_state;",
           "    case sd_standby_state:\n"
           "    case sd_sendingdata_state:\n    case sd_receivingdata_state:\n"
           "    case sd_programming_state:\n    case sd_disconnect_state:\n"
           "        break;\n    default:\n        return sd_invalid_state_for_cmd(sd, req);\n"
           "    }\n    if (sd_req_rca_same(sd, req)) {\n        sd->state = sd_inactive_state;",
           (), "CMD15"),
    Mutant("admaerr-length-mismatch-bit-read-only",
           _WHY, "hw/sd/sdhci.c",
           "MASKED_WRITE(s->admaerr, mask, value);",
           "MASKED_WRITE(s->admaerr, mask, value & 0x3);",
           (), "ADMAERR"),
    Mutant("acmd42-any-state",
           _WHY, "hw/sd/sd.c",
           "sd_acmd_SET_CLR_CARD_DETECT(SDState *sd, SDRequest req)\n{\n"
           "    if (sd->state != sd_transfer_state) {",
           "sd_acmd_SET_CLR_CARD_DETECT(SDState *sd, SDRequest req)\n{\n    if (0) {",
           (), "ACMD42"),
    Mutant("cmd13-answers-any-rca",
           _WHY, "hw/sd/sd.c",
           "    if (sd_is_spi(sd)) {\n        return spi_r2;\n    }\n\n"
           "    return sd_req_rca_same(sd, req) ? sd_r1 : sd_r0;",
           "    if (sd_is_spi(sd)) {\n        return spi_r2;\n    }\n\n    return sd_r1;",
           (), "CMD13"),
)
