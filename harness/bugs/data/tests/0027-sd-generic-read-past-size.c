/*
 * QTest testcase for the SD card: CMD13 during a multiple block read
 *
 * SD Physical Layer Simplified Specification 4.3.3, Table 4-41: CMD13
 * (SEND_STATUS) is valid in the send-data state and does not end the
 * transfer.  The host reads the card 4 bytes a block after ACMD51 (the
 * 8-byte SCR): the read of CMD18 then stands at the SCR's length when
 * CMD13 comes, and the card must neither send nothing (an assertion in
 * sdbus_read_data) nor copy past its data.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

static void test_status_during_read(void)
{
    SDHCITest t = { 0 };
    uint8_t scr[8], word[4];
    uint32_t st;
    int i;

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);

    sd_cmd(&t, 55, t.rca << 16, RSP_R1);
    sd_read(&t, 51, 0, scr, sizeof(scr));
    sd_setup_data(&t, sizeof(word), 4,
                  SDHC_TRNS_READ | SDHC_TRNS_MULTI | SDHC_TRNS_BLKCNTEN);
    sd_cmd(&t, 18, 512, RSP_R1 | CMD_DATA);
    sdhci_get(&t, word, sizeof(word));      /* the second block is fetched */
    st = sd_status(&t);
    g_assert_cmpuint(CURRENT_STATE(st), ==, 5);     /* data */
    for (i = 0; i < 3; i++) {
        sdhci_get(&t, word, sizeof(word));
    }
    sdhci_wait(&t, SDHC_NIS_TRSCMPL);
    sd_cmd(&t, 12, 0, RSP_R1B);
    st = sd_status(&t);
    g_assert_cmpuint(CURRENT_STATE(st), ==, STATE_TRAN);

    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/send-status/during-multiple-read",
                   test_status_during_read);
    return g_test_run();
}
