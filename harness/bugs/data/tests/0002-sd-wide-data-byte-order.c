/*
 * QTest testcase for the SD card's CMD30 and ACMD22 data
 *
 * SD Physical Layer Simplified Specification 4.3.4 (CMD30 SEND_WRITE_PROT)
 * and 4.3.9 (ACMD22 SEND_NUM_WR_BLOCKS): the 32-bit value is sent most
 * significant byte first, whatever the host's byte order.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

static const uint8_t one_be[4] = { 0, 0, 0, 1 };

static void test_acmd22_byte_order(void)
{
    SDHCITest t = { 0 };
    uint8_t block[512] = { 0 };
    uint8_t count[4];

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);
    sd_write(&t, 24, 0, block, sizeof(block));
    sd_cmd(&t, 55, t.rca << 16, RSP_R1);
    sd_read(&t, 22, 0, count, sizeof(count));
    g_assert_cmpmem(count, sizeof(count), one_be, sizeof(one_be));
    sdhci_stop(&t);
}

static void test_cmd30_byte_order(void)
{
    SDHCITest t = { 0 };
    uint8_t bits[4];

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);
    /* protect the first group: bit 0 of CMD30's answer at address 0 */
    sd_cmd(&t, 28, 0, RSP_R1B);
    sdhci_wait(&t, SDHC_NIS_TRSCMPL);
    sd_read(&t, 30, 0, bits, sizeof(bits));
    g_assert_cmpmem(bits, sizeof(bits), one_be, sizeof(one_be));
    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/send-num-wr-blocks/byte-order",
                   test_acmd22_byte_order);
    qtest_add_func("/sdcard/send-write-prot/byte-order", test_cmd30_byte_order);
    return g_test_run();
}
