/*
 * QTest testcase for the SD card's written-block count across CMD0
 *
 * SD Physical Layer Simplified Specification 4.2.1 and 4.3.9: CMD0 puts
 * the card in the idle state; ACMD22 counts the blocks written by the
 * last write command, and none has been sent since the reset.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

static void test_acmd22_after_reset(void)
{
    SDHCITest t = { 0 };
    uint8_t block[512] = { 0 };
    uint8_t count[4];
    static const uint8_t zero[4];

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);
    sd_write(&t, 24, 0, block, sizeof(block));
    sd_init(&t);    /* starts with CMD0 */
    sd_cmd(&t, 55, t.rca << 16, RSP_R1);
    sd_read(&t, 22, 0, count, sizeof(count));
    g_assert_cmpmem(count, sizeof(count), zero, sizeof(zero));
    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/send-num-wr-blocks/after-reset",
                   test_acmd22_after_reset);
    return g_test_run();
}
