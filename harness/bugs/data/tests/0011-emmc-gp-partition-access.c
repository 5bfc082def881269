/*
 * QTest testcase for the eMMC general purpose partitions
 *
 * JESD84-B51 7.4.69 (PARTITION_CONFIG) and 6.6.1: selecting a general
 * purpose partition the device does not have is refused with SWITCH_ERROR,
 * and the device goes on serving the partition it had selected.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define PART_GP1        4
#define SWITCH_ERROR    (1u << 7)

static void test_missing_gp_partition(void)
{
    EMMCTest e = { 0 };
    uint8_t block[512];
    uint32_t st;

    emmc_start(&e, 4 * 1024 * 1024, "boot-partition-size=0");
    emmc_init(&e);
    emmc_select_partition(&e, PART_GP1);
    st = sd_cmd(&e.sdhci, 13, e.sdhci.rca << 16, RSP_R1);
    g_assert_cmphex(st & SWITCH_ERROR, ==, SWITCH_ERROR);
    sd_read(&e.sdhci, 17, emmc_address(&e, 0), block, sizeof(block));
    emmc_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/emmc/partition-config/missing-gp",
                   test_missing_gp_partition);
    return g_test_run();
}
