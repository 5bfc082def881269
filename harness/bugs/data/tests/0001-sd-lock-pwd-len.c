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
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "sdqtest-sdhci.h"

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
