/*
 * QTest testcase for the eMMC boot partitions' bounds
 *
 * JESD84-B51 6.2.5 and 6.6.4: a block address is checked against the size
 * of the partition PARTITION_ACCESS selects.  The block after the last of
 * boot partition 1 is out of range; it is not boot partition 2's first.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define BOOT_SIZE   (128 * 1024)

static void test_boot1_read_past_end(void)
{
    EMMCTest e = { 0 };
    uint8_t pattern[512], got[512];
    uint32_t past = BOOT_SIZE / 512;

    memset(pattern, 0xb2, sizeof(pattern));
    emmc_start(&e, 4 * 1024 * 1024 + 2 * BOOT_SIZE,
               "boot-partition-size=131072");
    emmc_init(&e);

    emmc_select_partition(&e, PART_BOOT2);
    sd_write(&e.sdhci, 24, emmc_address(&e, 0), pattern, sizeof(pattern));

    emmc_select_partition(&e, PART_BOOT1);
    memset(got, 0, sizeof(got));
    sd_read(&e.sdhci, 17, emmc_address(&e, past), got, sizeof(got));
    g_assert(memcmp(got, pattern, sizeof(got)) != 0);

    emmc_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/emmc/boot-partition/read-past-end",
                   test_boot1_read_past_end);
    return g_test_run();
}
