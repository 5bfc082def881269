/*
 * QTest testcase for the eMMC RPMB partition's bounds
 *
 * JESD84-B51 6.6.22.4 (Authenticated Data Read): a request for a
 * half-sector beyond the RPMB partition fails with result 0x0004 (address
 * failure) instead of returning whatever the image holds there.
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

static void sdhci_get(SDHCITest *t, uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 4) {
        stl_le_p(buf + i, qpci_io_readl(t->dev, t->bar, SDHC_BDATA));
    }
}

/* JESD84-B51 7.4.69 PARTITION_CONFIG, 6.10.4 SWITCH */
#define EXT_CSD_PART_CONFIG     179
#define SWITCH_WRITE_BYTE       3
#define PART_USER               0
#define PART_BOOT1              1
#define PART_BOOT2              2
#define PART_RPMB               3
#define OCR_BUSY                (1u << 31)
#define OCR_SECTOR_MODE         (1u << 30)
#define EMMC_RCA                2

typedef struct {
    SDHCITest sdhci;
    char *image;
    bool sector_mode;
} EMMCTest;

/* An eMMC on a fresh raw image of @size bytes, with @props. */
static void emmc_start(EMMCTest *e, size_t size, const char *props)
{
    g_autofree char *args = NULL;
    int fd = g_file_open_tmp("emmc-XXXXXX.img", &e->image, NULL);

    g_assert(fd >= 0);
    g_assert(ftruncate(fd, size) == 0);
    close(fd);
    args = g_strdup_printf("-drive if=none,id=card,file=%s,format=raw "
                           "-device emmc,drive=card,%s", e->image, props);
    sdhci_start(&e->sdhci, args);
}

static void emmc_stop(EMMCTest *e)
{
    sdhci_stop(&e->sdhci);
    unlink(e->image);
    g_free(e->image);
}

/* Identification (JESD84-B51 6.4) to the transfer state. */
static void emmc_init(EMMCTest *e)
{
    SDHCITest *t = &e->sdhci;
    uint32_t ocr = 0;
    int i;

    sd_cmd(t, 0, 0, RSP_NONE);
    for (i = 0; i < 100 && !(ocr & OCR_BUSY); i++) {
        ocr = sd_cmd(t, 1, OCR_SECTOR_MODE | 0x00ff8000, RSP_R3);
        qtest_clock_step(t->qts, 1000 * 1000);
    }
    g_assert(ocr & OCR_BUSY);
    e->sector_mode = ocr & OCR_SECTOR_MODE;
    sd_cmd(t, 2, 0, RSP_R2);
    t->rca = EMMC_RCA;
    sd_cmd(t, 3, t->rca << 16, RSP_R1);
    sd_cmd(t, 7, t->rca << 16, RSP_R1B);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
}

static void emmc_select_partition(EMMCTest *e, uint8_t part)
{
    uint32_t arg = (SWITCH_WRITE_BYTE << 24) | (EXT_CSD_PART_CONFIG << 16) |
                   (part << 8);

    sd_cmd(&e->sdhci, 6, arg, RSP_R1B);
    sdhci_wait(&e->sdhci, SDHC_NIS_TRSCMPL);
}

#define RPMB_SIZE               (128 * 1024)
#define RPMB_HALF_SECTOR        256
/* JESD84-B51 6.6.22, Table 18: the 512-byte data frame */
#define RPMB_KEY_MAC            196
#define RPMB_NONCE              484
#define RPMB_ADDRESS            504
#define RPMB_BLOCK_COUNT        506
#define RPMB_RESULT             508
#define RPMB_REQ_RESP           510
#define RPMB_REQ_PROGRAM_KEY    0x0001
#define RPMB_REQ_AUTH_READ      0x0004
#define RPMB_REQ_READ_RESULT    0x0005
#define RPMB_RESULT_ADDR_FAIL   0x0004

/* CMD23 (one frame) then CMD25 writing @frame. */
static void rpmb_send(EMMCTest *e, const uint8_t *frame)
{
    SDHCITest *t = &e->sdhci;

    sd_cmd(t, 23, 1, RSP_R1);
    sd_setup_data(t, 512, 1, SDHC_TRNS_BLKCNTEN | SDHC_TRNS_MULTI);
    sd_cmd(t, 25, 0, RSP_R1 | CMD_DATA);
    sdhci_put(t, frame, 512);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
}

/* CMD23 (one frame) then CMD18 reading @frame. */
static void rpmb_receive(EMMCTest *e, uint8_t *frame)
{
    SDHCITest *t = &e->sdhci;

    sd_cmd(t, 23, 1, RSP_R1);
    sd_setup_data(t, 512, 1,
                  SDHC_TRNS_BLKCNTEN | SDHC_TRNS_MULTI | SDHC_TRNS_READ);
    sd_cmd(t, 18, 0, RSP_R1 | CMD_DATA);
    sdhci_get(t, frame, 512);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
}

static void test_rpmb_read_past_end(void)
{
    EMMCTest e = { 0 };
    uint8_t frame[512];
    int i;

    emmc_start(&e, 4 * 1024 * 1024 + RPMB_SIZE, "rpmb-partition-size=131072");
    emmc_init(&e);
    emmc_select_partition(&e, PART_RPMB);

    memset(frame, 0, sizeof(frame));
    for (i = 0; i < 32; i++) {
        frame[RPMB_KEY_MAC + i] = 0x40 + i;
    }
    stw_be_p(frame + RPMB_REQ_RESP, RPMB_REQ_PROGRAM_KEY);
    rpmb_send(&e, frame);
    memset(frame, 0, sizeof(frame));
    stw_be_p(frame + RPMB_REQ_RESP, RPMB_REQ_READ_RESULT);
    rpmb_send(&e, frame);
    rpmb_receive(&e, frame);
    g_assert_cmphex(lduw_be_p(frame + RPMB_RESULT), ==, 0);

    memset(frame, 0, sizeof(frame));
    memset(frame + RPMB_NONCE, 0xa5, 16);
    stw_be_p(frame + RPMB_ADDRESS, RPMB_SIZE / RPMB_HALF_SECTOR);
    stw_be_p(frame + RPMB_BLOCK_COUNT, 1);
    stw_be_p(frame + RPMB_REQ_RESP, RPMB_REQ_AUTH_READ);
    rpmb_send(&e, frame);
    rpmb_receive(&e, frame);
    g_assert_cmphex(lduw_be_p(frame + RPMB_RESULT) & 0x7f, ==,
                    RPMB_RESULT_ADDR_FAIL);

    emmc_stop(&e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/emmc/rpmb/read-past-end", test_rpmb_read_past_end);
    return g_test_run();
}
