# ruff: noqa: E501  (the shell script keeps its long lines)
"""The guest's ``/init``: a busybox shell script (kept here so it ships with the package).

It mounts /proc, /sys and devtmpfs, loads the modules listed in
``/sdqtest/modules`` (deps first), waits for ``/dev/mmcblk0``, runs the jobs of
``sdqtest.jobs=`` on the kernel command line and prints the result protocol of
:mod:`harness.guest.protocol` on the console, then powers off.
"""

INIT = r"""#!/bin/busybox sh
# sdqtest guest /init (busybox sh); protocol: harness/guest/protocol.py
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
echo 1 > /proc/sys/kernel/printk
DEV=/dev/mmcblk0
BLK=/sys/block/mmcblk0

say() { echo "SDQTEST-$1 $2"; }
ms() { awk '{printf "%d", $1 * 1000}' /proc/uptime; }
clean() { tr -d '"\\\n\r\t' | cut -c1-300; }
param() { # the last NAME=value on the kernel command line wins
    v=""
    for w in $(cat /proc/cmdline); do
        case "$w" in "$1="*) v="${w#*=}";; esac
    done
    echo "$v"
}
finish() {
    say DONE ""
    sync
    poweroff -f
    sleep 10
}
fail() { say ERROR "{\"job\":\"$1\",\"error\":\"$(echo "$2" | clean)\"}"; }

say HELLO "{\"protocol\":1,\"kernel\":\"$(uname -r)\",\"initramfs\":\"$(cat /sdqtest/kernel 2>/dev/null)\"}"

loaded=""
failed=""
for m in $(cat /sdqtest/modules 2>/dev/null); do
    if [ -f "$m" ]; then
        if insmod "$m" 2>/tmp/err; then loaded="$loaded ${m##*/}"; else failed="$failed ${m##*/}: $(clean < /tmp/err)"; fi
    else
        failed="$failed ${m##*/}: missing"
    fi
done

wait_s=$(param sdqtest.wait)
n=$(( ${wait_s:-30} * 10 ))
while [ ! -b $DEV ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
if [ ! -b $DEV ]; then
    if [ "$(uname -r)" != "$(cat /sdqtest/kernel 2>/dev/null)" ]; then
        fail boot "no $DEV after ${wait_s:-30} s: kernel $(uname -r) has no mmc modules in this initramfs (built for $(cat /sdqtest/kernel 2>/dev/null)); modules:$failed"
    else
        fail boot "no $DEV after ${wait_s:-30} s (is there an sd-card on an sdhci-pci?); loaded:$loaded; failed:$failed"
    fi
    finish
fi

q() { cat $BLK/queue/$1 2>/dev/null || echo 0; }
say RESULT "{\"job\":\"card\",\"ok\":true,\"bytes\":$(( $(cat $BLK/size) * 512 )),\"discard_max_bytes\":$(q discard_max_bytes),\"discard_granularity\":$(q discard_granularity),\"max_sectors_kb\":$(q max_sectors_kb),\"card_type\":\"$(cat $BLK/device/type 2>/dev/null)\",\"erase_size\":$(cat $BLK/device/erase_size 2>/dev/null || echo 0),\"preferred_erase_size\":$(cat $BLK/device/preferred_erase_size 2>/dev/null || echo 0),\"modules\":\"$loaded\"}"

job_fio() { # fio:RW:BS_KIB:RUNTIME_S:SIZE_MIB
    if [ ! -x /usr/bin/fio ]; then fail "$1" "fio missing from the initramfs"; return; fi
    out=$(/usr/bin/fio --name=sdqtest --filename=$DEV --direct=1 --ioengine=psync \
          --rw="$2" --bs="$3"k --runtime="$4" --time_based --offset=0 --size="$5"M \
          --output-format=json 2>/tmp/err | tr -d '\n\t')
    if [ -z "$out" ]; then fail "$1" "fio: $(tail -n 3 /tmp/err)"; return; fi
    say RESULT "{\"job\":\"$1\",\"ok\":true,\"fio\":$out}"
}

job_discard() { # discard:OFFSET_MIB:LENGTH_MIB
    if [ ! -x /usr/sbin/blkdiscard ]; then fail "$1" "blkdiscard (util-linux) missing from the initramfs"; return; fi
    max=$(q discard_max_bytes)
    if [ "$max" = 0 ]; then
        say RESULT "{\"job\":\"$1\",\"ok\":false,\"supported\":false,\"reason\":\"the kernel advertises no discard for this card (discard_max_bytes 0)\"}"
        return
    fi
    t0=$(ms)
    /usr/sbin/blkdiscard -o $(( $2 * 1048576 )) -l $(( $3 * 1048576 )) $DEV 2>/tmp/err
    rc=$?
    t1=$(ms)
    sync
    if [ $rc != 0 ]; then fail "$1" "blkdiscard exit $rc: $(tail -n 2 /tmp/err)"; return; fi
    say RESULT "{\"job\":\"$1\",\"ok\":true,\"supported\":true,\"guest_ms\":$((t1 - t0)),\"discard_max_bytes\":$max}"
}

job_pwrite() { # pwrite:OFFSET_KIB:LENGTH_KIB  (/sdqtest/pattern.bin, 64 KiB units)
    if [ ! -f /sdqtest/pattern.bin ]; then fail "$1" "no /sdqtest/pattern.bin in the initramfs"; return; fi
    t0=$(ms)
    dd if=/sdqtest/pattern.bin of=$DEV bs=65536 seek=$(( $2 / 64 )) count=$(( $3 / 64 )) \
       oflag=direct conv=fsync 2>/tmp/err
    rc=$?
    t1=$(ms)
    if [ $rc != 0 ]; then fail "$1" "dd exit $rc: $(tail -n 2 /tmp/err)"; return; fi
    sum=$(dd if=/sdqtest/pattern.bin bs=65536 count=$(( $3 / 64 )) 2>/dev/null | sha256sum)
    say RESULT "{\"job\":\"$1\",\"ok\":true,\"guest_ms\":$((t1 - t0)),\"sha256\":\"${sum%% *}\"}"
}

job_pread() { # pread:OFFSET_KIB:LENGTH_KIB  (sha256 of what the card returns, direct I/O)
    sum=$(dd if=$DEV bs=65536 skip=$(( $2 / 64 )) count=$(( $3 / 64 )) iflag=direct 2>/tmp/err | sha256sum)
    say RESULT "{\"job\":\"$1\",\"ok\":true,\"sha256\":\"${sum%% *}\"}"
}

for job in $(param sdqtest.jobs | tr ',' ' '); do
    IFS=: read kind a b c d <<EOF
$job
EOF
    say START "{\"job\":\"$job\",\"guest_ms\":$(ms)}"
    case "$kind" in
        fio) job_fio "$job" "$a" "$b" "$c" "$d" ;;
        discard) job_discard "$job" "$a" "$b" ;;
        pwrite) job_pwrite "$job" "$a" "$b" ;;
        pread) job_pread "$job" "$a" "$b" ;;
        *) fail "$job" "unknown job kind $kind" ;;
    esac
done
finish
"""
