/*
 * QTest testcase for a write to a write protected group
 *
 * SD Physical Layer Simplified Specification 4.3.4 and 4.10.1
 * (WP_VIOLATION): a block in a group protected with CMD28 is not written;
 * the card reports WP_VIOLATION and the block keeps its data.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define WP_VIOLATION    (1u << 26)

static void test_write_to_protected_group(void)
{
    SDHCITest t = { 0 };
    g_autofree char *image = NULL;
    uint8_t block[512], got[512], zero[512] = { 0 };
    uint32_t r1;

    memset(block, 0x5a, sizeof(block));
    sd_start_image(&t, 16 * 1024 * 1024, &image);
    sd_init(&t);

    sd_cmd(&t, 28, 0, RSP_R1B);             /* SET_WRITE_PROT, group 0 */
    sdhci_wait(&t, SDHC_NIS_TRSCMPL);
    r1 = sd_write(&t, 24, 0, block, sizeof(block));
    g_assert_cmphex(r1 & WP_VIOLATION, ==, WP_VIOLATION);

    sd_read(&t, 17, 0, got, sizeof(got));
    g_assert(memcmp(got, zero, sizeof(got)) == 0);

    sdhci_stop(&t);
    unlink(image);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/write-protect/group-not-written",
                   test_write_to_protected_group);
    return g_test_run();
}
