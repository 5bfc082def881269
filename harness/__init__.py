"""sdqtest: QEMU's SD card and SDHCI devices held to a golden model.

Layers, highest first: each layer's modules import only modules of their
own layer and of the layers after its arrow, so dependencies point one way
(``tests/qtest/core/test_layers.py`` holds the code to this table)::

    cli        __main__, cli, commands.*, pytest_plugin
               -> review, bugs, bisect, bench, fuzz, guest, explore, check, scenarios,
                  driver, qemu, provision, model, target, base, errors
    review     review.*
               -> bisect, bench, guest, check, scenarios, driver, qemu, provision,
                  model, target, base, errors
    bugs       bugs.*
               -> bisect, check, scenarios, driver, qemu, provision, model, target,
                  base, errors
    bisect     bisect.*
               -> bench, guest, check, scenarios, driver, qemu, provision, model,
                  target, base, errors
    bench      bench.*
               -> guest, check, scenarios, driver, qemu, provision, model, target,
                  base, errors
    fuzz       fuzz.*
               -> check, scenarios, driver, qemu, provision, model, target, base,
                  errors
    guest      guest.*
               -> qemu, provision, target, base, errors
    explore    explore.*
               -> check, scenarios, driver, qemu, provision, model, target, base,
                  errors
    check      check.*, replay.*
               -> scenarios, driver, qemu, provision, model, target, base, errors
    scenarios  scenarios.*
               -> driver, target, base, errors
    driver     driver.*
               -> target, base, errors
    qemu       qemu.*
               -> provision, target, base, errors
    model      model.*
               -> target, base, errors
    provision  provision.*
               -> base, errors
    target     target
               -> base, errors
    base       paths, profile, machine, table, progress, images.*, hwdefs.*, ledger.*
               -> errors
    errors     errors
               -> nothing

``target.Target`` is the one seam: driver and scenarios are written once
against it, ``qemu.target`` and ``model.target`` implement it, and qemu and
model never import each other.  ``base`` holds neutral facts both sides
share (register layouts, build profiles, image recipes); ``errors`` the one
error tree.
"""

from importlib import metadata as _metadata

__all__ = ["__version__"]

try:
    #: The installed distribution's version: written once, in pyproject.toml.
    __version__ = _metadata.version("sdqtest")
except _metadata.PackageNotFoundError:  # imported from a checkout that is not installed
    __version__ = "0+unknown"
