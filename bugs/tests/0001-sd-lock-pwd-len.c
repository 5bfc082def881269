/*
 * QTest testcase for the SD card's CMD42 password length
 *
 * SD Physical Layer Simplified Specification 4.3.7: LOCK, UNLOCK and
 * CLR_PWD send the current password, PWD_LEN being its length; SET_PWD
 * sends the old password followed by the new one, PWD_LEN being their
 * total length.  With a password set, locking with it must work.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * This work is licensed under the terms of the GNU GPL, version 2 or later.
 * See the COPYING file in the top-level directory.
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pci-pc.h"

/* SD Host Controller Simplified Specification 2.2: register offsets */
#define SDHC_BLKSIZE        0x04
#define SDHC_BLKCNT         0x06
#define SDHC_ARGUMENT       0x08
#define SDHC_TRNMOD         0x0c
#define SDHC_CMDREG         0x0e
#define SDHC_RSPREG0        0x10
#define SDHC_BDATA          0x20
#define SDHC_PWRCON         0x29
#define SDHC_CLKCON         0x2c
#define SDHC_NORINTSTS      0x30
#define SDHC_ERRINTSTS      0x32
#define SDHC_NORINTSTSEN    0x34

#define SDHC_NIS_CMDCMPL    0x0001
#define SDHC_NIS_TRSCMPL    0x0002
#define SDHC_NIS_ERR        0x8000

#define SDHC_TRNS_BLKCNTEN  0x0002
#define SDHC_TRNS_READ      0x0010
#define SDHC_TRNS_MULTI     0x0020

/* CMDREG low byte: response type, CRC and index checks, data present */
#define RSP_NONE            0x00
#define RSP_R2              0x09
#define RSP_R3              0x02
#define RSP_R1              0x1a
#define RSP_R1B             0x1b
#define CMD_DATA            0x20

#define SDHCI_DEVFN         QPCI_DEVFN(4, 0)

typedef struct {
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    QPCIBar bar;
    uint16_t rca;
} SDHCITest;

static void sdhci_start(SDHCITest *t, const char *card_args)
{
    t->qts = qtest_initf("-machine q35 -device sdhci-pci,addr=04.0 %s",
                         card_args);
    t->bus = qpci_new_pc(t->qts, NULL);
    t->dev = qpci_device_find(t->bus, SDHCI_DEVFN);
    g_assert(t->dev);
    qpci_device_enable(t->dev);
    t->bar = qpci_iomap(t->dev, 0, NULL);
    /* 3.3 V bus power, internal clock then SD clock, all statuses enabled */
    qpci_io_writeb(t->dev, t->bar, SDHC_PWRCON, 0x0f);
    qpci_io_writew(t->dev, t->bar, SDHC_CLKCON, 0x8001);
    qpci_io_writew(t->dev, t->bar, SDHC_CLKCON, 0x8005);
    qpci_io_writel(t->dev, t->bar, SDHC_NORINTSTSEN, 0xffffffff);
}

static void sdhci_stop(SDHCITest *t)
{
    g_free(t->dev);
    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
}

/* Wait for one of @mask in Normal Interrupt Status, then clear it. */
static uint16_t sdhci_wait(SDHCITest *t, uint16_t mask)
{
    uint16_t st = 0;
    int i;

    for (i = 0; i < 1000; i++) {
        st = qpci_io_readw(t->dev, t->bar, SDHC_NORINTSTS);
        if (st & (mask | SDHC_NIS_ERR)) {
            break;
        }
        qtest_clock_step(t->qts, 10000);
    }
    qpci_io_writew(t->dev, t->bar, SDHC_NORINTSTS, st & mask);
    return st;
}

/* Issue a command; returns its 32-bit response (0 on a controller error). */
static uint32_t sd_cmd(SDHCITest *t, uint8_t index, uint32_t arg, uint8_t flags)
{
    uint16_t st;

    qpci_io_writel(t->dev, t->bar, SDHC_ARGUMENT, arg);
    qpci_io_writew(t->dev, t->bar, SDHC_CMDREG, (index << 8) | flags);
    st = sdhci_wait(t, SDHC_NIS_CMDCMPL);
    if (st & SDHC_NIS_ERR) {
        qpci_io_writew(t->dev, t->bar, SDHC_ERRINTSTS, 0xffff);
        qpci_io_writew(t->dev, t->bar, SDHC_NORINTSTS, 0xffff);
        return 0;
    }
    return qpci_io_readl(t->dev, t->bar, SDHC_RSPREG0);
}

static void sd_setup_data(SDHCITest *t, uint16_t len, uint16_t count,
                          uint16_t trnmod)
{
    qpci_io_writew(t->dev, t->bar, SDHC_BLKSIZE, len);
    qpci_io_writew(t->dev, t->bar, SDHC_BLKCNT, count);
    qpci_io_writew(t->dev, t->bar, SDHC_TRNMOD, trnmod);
}

static void sdhci_put(SDHCITest *t, const uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 4) {
        qpci_io_writel(t->dev, t->bar, SDHC_BDATA, ldl_le_p(buf + i));
    }
}

/* A single-block PIO write of @len bytes with command @index. */
static uint32_t sd_write(SDHCITest *t, uint8_t index, uint32_t arg,
                         const uint8_t *buf, uint16_t len)
{
    uint32_t r1;

    sd_setup_data(t, len, 1, 0);
    r1 = sd_cmd(t, index, arg, RSP_R1 | CMD_DATA);
    sdhci_put(t, buf, len);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
    return r1;
}

#define SD_MACHINE \
    "-blockdev driver=null-co,node-name=card,size=16777216,read-zeroes=on " \
    "-device sd-card,drive=card"

/* SD Physical Layer Simplified Specification 4.3.7, 4.10.1 */
#define CARD_IS_LOCKED      (1u << 25)
#define LOCK_UNLOCK_FAILED  (1u << 24)
#define CURRENT_STATE(st)   (((st) >> 9) & 0xf)
#define STATE_TRAN          4

/* Card identification (PLS 4.2): to the transfer state. */
static void sd_init(SDHCITest *t)
{
    uint32_t ocr = 0;
    int i;

    sd_cmd(t, 0, 0, RSP_NONE);
    g_assert_cmphex(sd_cmd(t, 8, 0x1aa, RSP_R1) & 0xfff, ==, 0x1aa);
    for (i = 0; i < 100 && !(ocr & (1u << 31)); i++) {
        sd_cmd(t, 55, 0, RSP_R1);
        ocr = sd_cmd(t, 41, 0x40ff8000, RSP_R3);
        qtest_clock_step(t->qts, 10 * 1000 * 1000);
    }
    g_assert(ocr & (1u << 31));
    sd_cmd(t, 2, 0, RSP_R2);
    t->rca = sd_cmd(t, 3, 0, RSP_R1) >> 16;
    sd_cmd(t, 7, t->rca << 16, RSP_R1B);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
}

static uint32_t sd_status(SDHCITest *t)
{
    return sd_cmd(t, 13, t->rca << 16, RSP_R1);
}

#define PASSWORD        "sdqt"
#define LOCK_SET_PWD    0x01
#define LOCK_LOCK       0x04
#define LOCK_UNLOCK     0x00

/* CMD42 with the lock card data structure in a 512-byte block. */
static uint32_t sd_lock_unlock(SDHCITest *t, uint8_t flags, const char *pwd)
{
    uint8_t block[512] = { flags, strlen(pwd) };

    memcpy(block + 2, pwd, strlen(pwd));
    sd_write(t, 42, 0, block, sizeof(block));
    return sd_status(t);
}

static void test_lock_with_password(void)
{
    SDHCITest t = { 0 };
    uint32_t st;

    sdhci_start(&t, SD_MACHINE);
    sd_init(&t);

    st = sd_lock_unlock(&t, LOCK_SET_PWD, PASSWORD);
    g_assert_cmphex(st & (LOCK_UNLOCK_FAILED | CARD_IS_LOCKED), ==, 0);

    st = sd_lock_unlock(&t, LOCK_LOCK, PASSWORD);
    g_assert_cmphex(st & LOCK_UNLOCK_FAILED, ==, 0);
    g_assert_cmphex(st & CARD_IS_LOCKED, ==, CARD_IS_LOCKED);

    st = sd_lock_unlock(&t, LOCK_UNLOCK, PASSWORD);
    g_assert_cmphex(st & (LOCK_UNLOCK_FAILED | CARD_IS_LOCKED), ==, 0);

    sdhci_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/sdcard/lock-unlock/password-length",
                   test_lock_with_password);
    return g_test_run();
}
