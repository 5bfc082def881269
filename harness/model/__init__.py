"""The golden model: SD card and SDHCI controller in Python.

Written from the SD Physical Layer and SD Host Controller Simplified
Specifications and from QEMU's observed behaviour.  Never imports
``harness.qemu``.
"""
