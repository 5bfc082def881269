/*
 * QTest testcase for ADMA after a Software Reset for DAT Line
 *
 * SD Host Controller Simplified Specification 3.00 2.2.16: Software Reset
 * For DAT Line stops DMA.  An ADMA2 transfer paused at a descriptor with
 * the Int attribute must not write guest memory after the reset.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

#define SDHC_HOSTCTL        0x28
#define SDHC_SWRST          0x2f
#define SDHC_NORINTSIGEN    0x38
#define SDHC_ADMASYSADDR    0x58
#define SDHC_CTRL_ADMA2_32  0x10
#define SDHC_RESET_DATA     0x04
/* ADMA2 attributes: Valid, End, Int, Act = Tran */
#define ADMA2_VALID         0x01
#define ADMA2_END           0x02
#define ADMA2_INT           0x04
#define ADMA2_TRAN          0x20
#define DESC_TABLE          0x200000
#define DESC_BUF(i)         (0x210000 + (i) * 0x1000)

static void adma2_desc(QTestState *qts, int i, uint16_t attr)
{
    qtest_writel(qts, DESC_TABLE + i * 8, (512 << 16) | attr);
    qtest_writel(qts, DESC_TABLE + i * 8 + 4, DESC_BUF(i));
}

static void test_no_adma_after_dat_reset(void)
{
    SDHCITest t = { 0 };
    int i;

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);
    for (i = 0; i < 3; i++) {
        qtest_memset(t.qts, DESC_BUF(i), 0xff, 512);
        adma2_desc(t.qts, i, ADMA2_VALID | ADMA2_INT | ADMA2_TRAN |
                   (i == 2 ? ADMA2_END : 0));
    }
    qpci_io_writew(t.dev, t.bar, SDHC_NORINTSIGEN, SDHC_NIS_DMA);
    qpci_io_writeb(t.dev, t.bar, SDHC_HOSTCTL, SDHC_CTRL_ADMA2_32);
    qpci_io_writel(t.dev, t.bar, SDHC_ADMASYSADDR, DESC_TABLE);
    sd_setup_data(&t, 512, 3, SDHC_TRNS_DMA | SDHC_TRNS_BLKCNTEN |
                  SDHC_TRNS_MULTI | SDHC_TRNS_READ);

    /* CMD18: the first descriptor's Int pauses the transfer */
    qpci_io_writel(t.dev, t.bar, SDHC_ARGUMENT, 0);
    qpci_io_writew(t.dev, t.bar, SDHC_CMDREG, (18 << 8) | RSP_R1 | CMD_DATA);
    g_assert_cmphex(qtest_readb(t.qts, DESC_BUF(0)), ==, 0);

    /* The driver gives up: DAT reset, then any register access */
    qpci_io_writeb(t.dev, t.bar, SDHC_SWRST, SDHC_RESET_DATA);
    qpci_io_readw(t.dev, t.bar, SDHC_NORINTSTS);
    qtest_clock_step(t.qts, 1000 * 1000 * 1000);
    g_assert_cmphex(qtest_readb(t.qts, DESC_BUF(2)), ==, 0xff);

    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdhci/adma/stopped-by-dat-reset",
                   test_no_adma_after_dat_reset);
    return g_test_run();
}
