"""Getting QEMU builds onto the machine: everything that downloads or compiles.

* :mod:`harness.provision.install`: Debian's binary packages (7.2, 10.0, 11.1)
  extracted side by side, with the qtest module rebuilt where Debian drops it;
  :mod:`harness.provision.install_arm` the same for the boards' builds
  (``qemu-system-arm``; ``qemu-system-riscv64`` from ``qemu-system-misc`` or
  ``qemu-system-riscv``).
* :mod:`harness.provision.source`: Debian's source releases by version
  (``sdqtest qemu build 11.1.1``), built into ``cache_dir()/source/<version>/``.
* :mod:`harness.provision.build`: configure + ninja of any QEMU tree out of
  tree (ccache, a private meson), used by the above, bisect, review and bugs.
* :mod:`harness.provision.proc` runs the commands with timeouts and logs;
  :mod:`harness.provision.firmware` finds BIOS files for a build.
"""
