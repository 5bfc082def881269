# Hand-written (not from a report): a command line QEMU refuses (a device
# it does not have): reported as refused, never as a crash.
cat << EOF | qemu-system-x86_64 -M q35 -accel qtest -device sdhci-pci \
  -device no-such-device -qtest stdio
readw 0xe00000fe
EOF
