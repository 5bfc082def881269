# Hand-written (not from a report): the heredoc form as mailing-list posts
# have it, with backslash continuations, a comment after a backslash and a
# comment line amid the continuation lines, -enable-kvm, accel=kvm and
# qemu-system-i386.  Replays under qtest with each of those rewritten.
cat << EOF | ./build/qemu-system-i386 -enable-kvm \
  -machine q35,accel=kvm -m 512M -nodefaults \   # the controller next
  # an sd-card on a null drive
  -device sdhci-pci -device sd-card,drive=d0 \
  -drive if=none,id=d0,file=null-co://,format=raw -qtest stdio
# CMD0 then CMD8
outl 0xcf8 0x80000810
outl 0xcfc 0xe0000000
outl 0xcf8 0x80000804
outw 0xcfc 0x06
readw 0xe00000fe
readl 0xe0000040
write 0xe0000029 0x1 0x0f
writew 0xe000002c 0x0001
clock_step 1000000
readw 0xe000002c
writew 0xe000002c 0x0005
writel 0xe0000034 0xffffffff
writel 0xe0000008 0x0
writew 0xe000000e 0x0000
clock_step 1000000
readl 0xe0000030
EOF
