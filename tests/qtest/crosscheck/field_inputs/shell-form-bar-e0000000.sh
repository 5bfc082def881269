# Hand-written in the style of a QEMU bug report (not from one): the
# controller's BAR mapped at 0xe0000000 through config space, MMIO through
# both readX/writeX and the guest-memory "write" command, CMD0 and CMD8.
cat << EOF | ./qemu-system-x86_64 -display none -machine accel=qtest, -m 512M \
  -nodefaults -device sdhci-pci,sd-spec-version=3 -device sd-card,drive=d0 \
  -drive if=none,index=0,file=null-co://,format=raw,id=d0 -nographic -qtest stdio
outl 0xcf8 0x80001010
outl 0xcfc 0xe0000000
outl 0xcf8 0x80001004
outw 0xcfc 0x06
readw 0xe00000fe
readl 0xe0000040
readl 0xe0000024
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
writew 0xe0000030 0xffff
writel 0xe0000008 0x1aa
write 0xe000000e 0x2 0x1a08
clock_step 1000000
readl 0xe0000030
readl 0xe0000010
readl 0xe0000024
