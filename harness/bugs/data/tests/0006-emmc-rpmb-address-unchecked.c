/*
 * QTest testcase for the eMMC RPMB partition's bounds
 *
 * JESD84-B51 6.6.22.4 (Authenticated Data Read): a request for a
 * half-sector beyond the RPMB partition fails with result 0x0004 (address
 * failure) instead of returning whatever the image holds there.
 *
 * Copyright (c) 2026 The sdqtest authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

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
