"""sdqtest: QEMU's SD card and SDHCI devices held to a golden model.

Layers, each depending only on the ones below it::

    tests / cli / checks
        -> driver, scenarios       (written once against Target)
        -> target.Target           (the one seam)
        -> qemu.*  |  model.*      (never import each other)
        -> hwdefs.*, profile, machine  (neutral facts shared by both sides)
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
