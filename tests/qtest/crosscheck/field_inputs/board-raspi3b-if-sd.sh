# Hand-written (not from a report): an ARM board's reproducer in the form
# reporters write them.  The board's own card is -drive if=sd: kept, not
# rewritten; -nographic without -nodefaults would put the serial port on
# stdio, where qtest is: dropped, and said.
cat << EOF | qemu-system-aarch64 -M raspi3b -display none \
  -machine accel=qtest -drive if=sd,index=0,file=null-co://,format=raw \
  -nographic -qtest stdio
readl 0x3f3000fc
readl 0x3f300040
writel 0x3f30002c 0x5
readl 0x3f30002c
clock_step 1000
EOF
