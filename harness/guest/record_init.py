# ruff: noqa: E501  (the shell script keeps its long lines)
"""The ``/init`` of a recording boot (``sdqtest drivers record``): a busybox shell script.

It does what users of an SD card do, one *phase* at a time, and marks each
phase in QEMU's trace: before a phase it writes the phase's number to I/O port
0x80 (the PC's POST port, QEMU's ``ioport80`` region) through ``/dev/port``, so
the trace shows ``memory_region_ops_write ... name 'ioport80'`` with the number
between the controller's accesses of one phase and the next.  The console
carries the result protocol of :mod:`harness.guest.protocol` (one START/RESULT
per phase), so :func:`harness.guest.runner.run` reads it as any guest.

Phases (their numbers are :data:`PHASES`' order, from 1):  ``probe`` (the mmc
modules loaded, the card initialised, the partition scan's reads),
``read-512``, ``read-4k``, ``read-64k``, ``write-512``, ``write-4k``,
``write-64k`` (fio, direct I/O, one block size each: busybox's ``dd`` went
through the page cache whatever its ``oflag=direct``, a 512-byte write becoming
a 4 KiB read-modify-write; the writes carry :data:`PATTERNS`), ``discard`` (util-linux's ``blkdiscard``), ``mkfs``
(busybox's ``mkdosfs``, through the page cache, then ``sync``) and ``fio`` (a short
random read/write run with direct I/O and a fixed buffer pattern).  Where
each phase reads or writes is :data:`REGIONS` (in 512-byte blocks), passed on
the kernel command line so the host side and this script agree.
"""

from __future__ import annotations

#: Phase names in order; phase ``i`` is marked by writing ``i + 1`` to port 0x80.
PHASES = ("probe", "read-512", "read-4k", "read-64k", "write-512", "write-4k", "write-64k",
          "discard", "mkfs", "fio")
#: Phase -> (first block, block size in bytes, count) of its I/O on the card;
#: discard: (first block, 512, blocks).  On a 16 MiB card (32768 blocks).
REGIONS = {
    "read-512": (16384, 512, 4), "read-4k": (16896, 4096, 4), "read-64k": (17408, 65536, 2),
    "write-512": (18432, 512, 4), "write-4k": (18944, 4096, 4), "write-64k": (19456, 65536, 2),
    "discard": (20480, 512, 2048), "fio": (24576, 4096, 64),
}
#: The buffer pattern of the fio phase (fio ``--buffer_pattern``): 4 bytes.
FIO_PATTERN = bytes.fromhex("5aa5c33c")
#: The data each write phase writes: fio's ``--buffer_pattern``, repeated.
PATTERNS = {"write-512": bytes.fromhex("5d200512"), "write-4k": bytes.fromhex("5d204096"),
            "write-64k": bytes.fromhex("5d265536"), "fio": FIO_PATTERN}


def kernel_args() -> str:
    """The kernel command line words that tell this script the regions."""
    return " ".join(f"sdqtest.{p}={a}:{b}:{c}" for p, (a, b, c) in REGIONS.items())


INIT = r"""#!/bin/busybox sh
# sdqtest recording guest /init (busybox sh); see harness/guest/record_init.py
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo 1 > /proc/sys/kernel/printk

say() { echo "SDQTEST-$1 $2"; }
clean() { tr -d '"\\\n\r\t' | cut -c1-300; }
param() {
    v=""
    for w in $(cat /proc/cmdline); do
        case "$w" in "$1="*) v="${w#*=}";; esac
    done
    echo "$v"
}
mark() { # the phase number on port 0x80 (or at sdqtest.mark, an ARM board's): a trace line
    at=$(param sdqtest.mark)
    if [ -n "$at" ]; then devmem $at 32 $1; return; fi
    printf "\\$(printf '%03o' $1)" | dd of=/dev/port bs=1 seek=128 count=1 conv=notrunc 2>/dev/null
}
N=0
phase() { N=$((N + 1)); sync; mark $N; say START "{\"job\":\"$1\"}"; }
ok() { say RESULT "{\"job\":\"$1\",\"ok\":true$2}"; }
fail() { say ERROR "{\"job\":\"$1\",\"error\":\"$(echo "$2" | clean)\"}"; }
finish() { mark 255; say DONE ""; sync; poweroff -f; sleep 10; }
region() { param sdqtest.$1 | tr ':' ' '; }
DEV=$(param sdqtest.dev)
DEV=${DEV:-/dev/mmcblk0}

say HELLO "{\"protocol\":1,\"kernel\":\"$(uname -r)\",\"recording\":1}"
phase probe
for m in $(cat /sdqtest/modules 2>/dev/null); do insmod "$m" 2>/tmp/err || fail probe "insmod $m: $(cat /tmp/err)"; done
n=300
while [ ! -b $DEV ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
if [ ! -b $DEV ]; then fail probe "no $DEV after 30 s"; finish; fi
sleep 1
B=/sys/block/${DEV#/dev/}
ok probe ",\"bytes\":$(( $(cat $B/size) * 512 )),\"discard_max_bytes\":$(cat $B/queue/discard_max_bytes)"

fio_io() { # PHASE RW PATTERN: one fio job with direct I/O over the phase's region
    set -- "$1" "$2" "$3" $(region $1)
    if [ ! -x /usr/bin/fio ]; then dd_io "$@"; return; fi
    /usr/bin/fio --name=$1 --filename=$DEV --direct=1 --ioengine=psync --rw=$2 --bs=$5 \
        --offset=$(( $4 * 512 )) --size=$(( $5 * $6 )) --buffer_pattern=$3 --output=/dev/null 2>/tmp/err \
        && ok $1 "" || fail $1 "fio: $(tail -n 1 /tmp/err)"
}
dd_io() { # without fio (a board's guest): busybox dd, the data from /sdqtest/PHASE.bin
    if [ "$2" = read ]; then
        dd if=$DEV of=/dev/null bs=$5 skip=$(( $4 * 512 / $5 )) count=$6 iflag=direct 2>/tmp/err
    else
        dd if=/sdqtest/$1.bin of=$DEV bs=$5 seek=$(( $4 * 512 / $5 )) count=$6 oflag=direct conv=fsync 2>/tmp/err
    fi && ok $1 ",\"dd\":true" || fail $1 "dd: $(tail -n 1 /tmp/err)"
}
for p in read-512 read-4k read-64k; do phase $p; fio_io $p read 0x00; done
phase write-512; fio_io write-512 write 0x5d200512
phase write-4k; fio_io write-4k write 0x5d204096
phase write-64k; fio_io write-64k write 0x5d265536
set -- $(region discard)
phase discard
BD=/usr/sbin/blkdiscard; [ -x $BD ] || BD=blkdiscard
if $BD -o $(( $1 * 512 )) -l $(( $3 * 512 )) $DEV 2>/tmp/err; then ok discard ""; else fail discard "blkdiscard: $(tail -n 1 /tmp/err)"; fi
phase mkfs
if mkdosfs -n SDQTEST $DEV 2>/tmp/err >/dev/null; then sync; ok mkfs ""; else fail mkfs "mkdosfs: $(tail -n 1 /tmp/err)"; fi
set -- $(region fio)
phase fio
if [ -x /usr/bin/fio ]; then
    /usr/bin/fio --name=rec --filename=$DEV --direct=1 --ioengine=psync --rw=randrw --bs=$2 \
        --offset=$(( $1 * 512 )) --size=$(( $2 * $3 )) --number_ios=24 --randseed=1 \
        --buffer_pattern=0x5aa5c33c --output=/dev/null 2>/tmp/err && ok fio "" || fail fio "fio: $(tail -n 1 /tmp/err)"
else
    ok fio ",\"skipped\":\"no fio in this guest\""
fi
finish
"""

#: What the guest did in each phase, for the recording's reader.
DID = {
    "probe": "insmod mmc_core, mmc_block, sdhci, sdhci-pci: the driver resets and powers the "
             "controller, probes SDIO (CMD52, CMD5) then SD, initialises the card (CMD0, 8, "
             "ACMD41, CMD2, 3, 9, 7, ACMD51, CMD6, ACMD6), and mmc_block reads the partition "
             "table",
    "read-512": "fio --rw=read --bs=512 --direct=1: 4 reads of one block (CMD17)",
    "read-4k": "fio --rw=read --bs=4k --direct=1: 4 reads of 8 blocks (CMD18, CMD12)",
    "read-64k": "fio --rw=read --bs=64k --direct=1: 2 reads of 128 blocks",
    "write-512": "fio --rw=write --bs=512 --direct=1: 4 writes of one block (CMD24, CMD13)",
    "write-4k": "fio --rw=write --bs=4k --direct=1: 4 writes of 8 blocks (CMD25, CMD12, CMD13)",
    "write-64k": "fio --rw=write --bs=64k --direct=1: 2 writes of 128 blocks",
    "discard": "blkdiscard of 1 MiB (libblkid's probe reads first, then CMD32, 33, 38)",
    "mkfs": "busybox mkdosfs on the whole card through the page cache, then sync",
    "fio": "fio --rw=randrw --bs=4k --direct=1 --number_ios=24 --randseed=1 over 256 KiB",
}

#: The sized phases as a guest without fio does them (busybox dd; see ``dd_io``).
DID_DD = {**DID,
          "read-512": "busybox dd iflag=direct bs=512 count=4",
          "read-4k": "busybox dd iflag=direct bs=4k count=4",
          "read-64k": "busybox dd iflag=direct bs=64k count=2",
          "write-512": "busybox dd oflag=direct conv=fsync bs=512 count=4 of a fixed pattern",
          "write-4k": "busybox dd oflag=direct conv=fsync bs=4k count=4 of a fixed pattern",
          "write-64k": "busybox dd oflag=direct conv=fsync bs=64k count=2 of a fixed pattern",
          "discard": "busybox blkdiscard of 1 MiB (CMD32, 33, 38 per 512 KiB)",
          "probe": "insmod sdhci, cqhci, sdhci-pltfm and the board's host driver (mmc_core "
                   "and mmc_block are built in): the driver probes the controller and "
                   "initialises the card, mmc_block reads the partition table"}
