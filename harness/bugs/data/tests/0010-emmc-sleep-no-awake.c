/*
 * QTest testcase for the eMMC sleep state
 *
 * JESD84-B51 6.6.21 (Sleep, CMD5): CMD5 with the sleep bit clear brings a
 * sleeping device back to stand-by, and CMD0 resets it to idle; either way
 * the device can be used again.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define CMD5_SLEEP      (1u << 15)

static void emmc_sleep(EMMCTest *e)
{
    SDHCITest *t = &e->sdhci;

    sd_cmd(t, 7, 0, RSP_NONE);      /* deselect: to stand-by */
    sd_cmd(t, 5, (t->rca << 16) | CMD5_SLEEP, RSP_R1B);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
}

static void test_sleep_then_reset(void)
{
    EMMCTest e = { 0 };

    emmc_start(&e, 4 * 1024 * 1024, "boot-partition-size=0");
    emmc_init(&e);
    emmc_sleep(&e);
    emmc_init(&e);      /* starts with CMD0 */
    g_assert_cmpuint((sd_cmd(&e.sdhci, 13, e.sdhci.rca << 16, RSP_R1) >> 9)
                     & 0xf, ==, 4);
    emmc_stop(&e);
}

static void test_sleep_then_awake(void)
{
    EMMCTest e = { 0 };
    SDHCITest *t = &e.sdhci;

    emmc_start(&e, 4 * 1024 * 1024, "boot-partition-size=0");
    emmc_init(&e);
    emmc_sleep(&e);
    sd_cmd(t, 5, t->rca << 16, RSP_R1B);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
    sd_cmd(t, 7, t->rca << 16, RSP_R1B);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
    g_assert_cmpuint((sd_cmd(t, 13, t->rca << 16, RSP_R1) >> 9) & 0xf, ==, 4);
    emmc_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/emmc/sleep/reset", test_sleep_then_reset);
    qtest_add_func("/emmc/sleep/awake", test_sleep_then_awake);
    return g_test_run();
}
