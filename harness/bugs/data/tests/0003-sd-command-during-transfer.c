/*
 * QTest testcase for the SD card: CMD13 during a write
 *
 * SD Physical Layer Simplified Specification 4.3.3-4.3.4, Table 4-42:
 * CMD13 (SEND_STATUS) is valid in the receive-data state and does not end
 * the transfer; the data block sent afterwards completes the write.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

static void test_status_during_write(void)
{
    SDHCITest t = { 0 };
    uint8_t block[512];
    uint32_t st;

    memset(block, 0x5a, sizeof(block));
    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);

    sd_setup_data(&t, sizeof(block), 1, 0);
    sd_cmd(&t, 24, 0, RSP_R1 | CMD_DATA);
    st = sd_status(&t);
    g_assert_cmpuint(CURRENT_STATE(st), ==, 6);     /* rcv */
    sdhci_put(&t, block, sizeof(block));
    sdhci_wait(&t, SDHC_NIS_TRSCMPL);
    st = sd_status(&t);
    g_assert_cmpuint(CURRENT_STATE(st), ==, STATE_TRAN);

    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/send-status/during-write",
                   test_status_during_write);
    return g_test_run();
}
