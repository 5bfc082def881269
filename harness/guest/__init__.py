"""A real Linux guest on QEMU's SD card: assembled from Debian packages, run over its console.

* :mod:`harness.guest.assemble`: kernel and initramfs from Debian packages, into the cache.
* :mod:`harness.guest.protocol`: the ``SDQTEST-*`` console result protocol.
* :mod:`harness.guest.card`: the card image the guest runs on, its pattern and host checks.
* :mod:`harness.guest.runner`: the QEMU command line and one guest boot.
* :mod:`harness.guest.initscript`: the guest's ``/init``; :mod:`harness.guest.cpio` and
  :mod:`harness.guest.elf`: the newc writer and the ELF reading the assembler needs.
"""
