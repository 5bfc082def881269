/*
 * SD host controller and card helpers for sdqtest's bug tests
 *
 * A minimal PIO driver of sdhci-pci on q35, after the SD Host Controller
 * Simplified Specification 2.2 (registers), the SD Physical Layer
 * Simplified Specification 4.2 (identification) and JESD84-B51 (eMMC):
 * each bugs/tests/NNNN-*.c includes it; `sdqtest bugs --verify` copies it
 * beside them into tests/qtest.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef SDQTEST_SDHCI_H
#define SDQTEST_SDHCI_H

#include "libqtest.h"
#include "qemu/bswap.h"
#include "libqos/pci-pc.h"

/* SD Host Controller Simplified Specification 2.2: register offsets */
#define SDHC_SYSAD          0x00
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
#define SDHC_NIS_DMA        0x0008
#define SDHC_NIS_ERR        0x8000

#define SDHC_TRNS_DMA       0x0001
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

static inline void sdhci_start(SDHCITest *t, const char *card_args)
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

static inline void sdhci_stop(SDHCITest *t)
{
    g_free(t->dev);
    qpci_free_pc(t->bus);
    qtest_quit(t->qts);
}

/* Wait for one of @mask in Normal Interrupt Status, then clear it. */
static inline uint16_t sdhci_wait(SDHCITest *t, uint16_t mask)
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
static inline uint32_t sd_cmd(SDHCITest *t, uint8_t index, uint32_t arg,
                              uint8_t flags)
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

static inline void sd_setup_data(SDHCITest *t, uint16_t len, uint16_t count,
                                 uint16_t trnmod)
{
    qpci_io_writew(t->dev, t->bar, SDHC_BLKSIZE, len);
    qpci_io_writew(t->dev, t->bar, SDHC_BLKCNT, count);
    qpci_io_writew(t->dev, t->bar, SDHC_TRNMOD, trnmod);
}

static inline void sdhci_put(SDHCITest *t, const uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 4) {
        qpci_io_writel(t->dev, t->bar, SDHC_BDATA, ldl_le_p(buf + i));
    }
}

static inline void sdhci_get(SDHCITest *t, uint8_t *buf, size_t len)
{
    size_t i;

    for (i = 0; i < len; i += 4) {
        stl_le_p(buf + i, qpci_io_readl(t->dev, t->bar, SDHC_BDATA));
    }
}

/* A single-block PIO write of @len bytes with command @index. */
static inline uint32_t sd_write(SDHCITest *t, uint8_t index, uint32_t arg,
                                const uint8_t *buf, uint16_t len)
{
    uint32_t r1;

    sd_setup_data(t, len, 1, 0);
    r1 = sd_cmd(t, index, arg, RSP_R1 | CMD_DATA);
    sdhci_put(t, buf, len);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
    return r1;
}

/* A single-block PIO read of @len bytes with command @index. */
static inline uint32_t sd_read(SDHCITest *t, uint8_t index, uint32_t arg,
                               uint8_t *buf, uint16_t len)
{
    uint32_t r1;

    sd_setup_data(t, len, 1, SDHC_TRNS_READ);
    r1 = sd_cmd(t, index, arg, RSP_R1 | CMD_DATA);
    sdhci_get(t, buf, len);
    sdhci_wait(t, SDHC_NIS_TRSCMPL);
    return r1;
}

#define SD_MACHINE \
    "-blockdev driver=null-co,node-name=card,size=16777216,read-zeroes=on " \
    "-device sd-card,drive=card"

/* An SD card on a fresh raw image of @size bytes (its path in @image). */
static inline void sd_start_image(SDHCITest *t, size_t size, char **image)
{
    g_autofree char *args = NULL;
    int fd = g_file_open_tmp("sdcard-XXXXXX.img", image, NULL);

    g_assert(fd >= 0);
    g_assert(ftruncate(fd, size) == 0);
    close(fd);
    args = g_strdup_printf("-drive if=none,id=card,file=%s,format=raw "
                           "-device sd-card,drive=card", *image);
    sdhci_start(t, args);
}

/* SD Physical Layer Simplified Specification 4.3.7, 4.10.1 */
#define CARD_IS_LOCKED      (1u << 25)
#define LOCK_UNLOCK_FAILED  (1u << 24)
#define CURRENT_STATE(st)   (((st) >> 9) & 0xf)
#define STATE_TRAN          4

/* Card identification (PLS 4.2): to the transfer state. */
static inline void sd_init(SDHCITest *t)
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
static inline void emmc_start(EMMCTest *e, size_t size, const char *props)
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

static inline void emmc_stop(EMMCTest *e)
{
    sdhci_stop(&e->sdhci);
    unlink(e->image);
    g_free(e->image);
}

/* Identification (JESD84-B51 6.4) to the transfer state. */
static inline void emmc_init(EMMCTest *e)
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

static inline void emmc_select_partition(EMMCTest *e, uint8_t part)
{
    uint32_t arg = (SWITCH_WRITE_BYTE << 24) | (EXT_CSD_PART_CONFIG << 16) |
                   (part << 8);

    sd_cmd(&e->sdhci, 6, arg, RSP_R1B);
    sdhci_wait(&e->sdhci, SDHC_NIS_TRSCMPL);
}

static inline uint32_t emmc_address(EMMCTest *e, uint32_t block)
{
    return e->sector_mode ? block : block * 512;
}

static inline uint32_t sd_status(SDHCITest *t)
{
    return sd_cmd(t, 13, t->rca << 16, RSP_R1);
}

#endif /* SDQTEST_SDHCI_H */
