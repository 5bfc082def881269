/*
 * QTest testcase for an SDMA transfer stopped at a buffer boundary
 *
 * SD Host Controller Simplified Specification 3.00 1.14.1 and 2.2.1: at
 * an SDMA buffer boundary the controller stops and raises DMA Interrupt;
 * the driver writes the next address to SDMA System Address and the
 * transfer resumes from there.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define SDMA_BUF        0x100000
#define SDMA_BOUNDARY   4096            /* Block Size bits 14:12 = 0 */
#define SDMA_BLOCKS     16

static void test_sdma_resume_at_boundary(void)
{
    SDHCITest t = { 0 };
    uint8_t got[SDMA_BOUNDARY];
    uint16_t st;

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);
    qtest_memset(t.qts, SDMA_BUF, 0xff, SDMA_BLOCKS * 512);

    qpci_io_writel(t.dev, t.bar, SDHC_SYSAD, SDMA_BUF);
    sd_setup_data(&t, 512, SDMA_BLOCKS, SDHC_TRNS_DMA | SDHC_TRNS_BLKCNTEN |
                  SDHC_TRNS_MULTI | SDHC_TRNS_READ);
    sd_cmd(&t, 18, 0, RSP_R1 | CMD_DATA);

    st = sdhci_wait(&t, SDHC_NIS_DMA);
    g_assert_cmphex(st & (SDHC_NIS_DMA | SDHC_NIS_TRSCMPL), ==, SDHC_NIS_DMA);
    qpci_io_writel(t.dev, t.bar, SDHC_SYSAD, SDMA_BUF + SDMA_BOUNDARY);
    st = sdhci_wait(&t, SDHC_NIS_TRSCMPL);
    g_assert_cmphex(st & SDHC_NIS_TRSCMPL, ==, SDHC_NIS_TRSCMPL);
    g_assert_cmpuint(qpci_io_readw(t.dev, t.bar, SDHC_BLKCNT), ==, 0);

    /* The second half came from the card (zeros), not left as it was */
    qtest_memread(t.qts, SDMA_BUF + SDMA_BOUNDARY, got, sizeof(got));
    g_assert_cmphex(got[0], ==, 0);
    g_assert_cmphex(got[sizeof(got) - 1], ==, 0);

    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdhci/sdma/resume-at-boundary",
                   test_sdma_resume_at_boundary);
    return g_test_run();
}
