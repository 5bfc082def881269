# Hand-written (not from a report): a versioned machine type that QEMU
# 11.1 no longer has (pc-q35-2.4; 11.1 starts at pc-q35-5.2).
cat << EOF | qemu-system-x86_64 -M pc-q35-2.4 -accel qtest -nodefaults \
  -device sdhci-pci -device sd-card,drive=d -drive if=none,id=d,file=null-co://,format=raw \
  -qtest stdio
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
