"""Real QEMU builds (Debian's 7.2, 10.0 and 11.1) side by side, each with qtest.

``harness.provision.install`` puts them into private roots under ``paths.qemu_dir()``.
"""
