"""The host driver, written once against :class:`harness.target.Target`.

``HostDriver(target).init()`` resets and powers the controller and brings
the card to transfer state; :meth:`HostDriver.command` sends any command;
``read_blocks`` / ``write_blocks`` move data by PIO, SDMA or ADMA2.
``RecordingTarget`` logs every Target call for the cross-checker.
"""

from harness.driver.adma import Adma2Desc, AdmaOptions, AdmaPlan, plan_adma2
from harness.driver.controller import Controller
from harness.driver.host import CardInfo, HostDriver
from harness.driver.recording import Event, RecordingTarget, first_difference
from harness.driver.results import (
    RESPONSE_ENCODING,
    CommandResult,
    DriverError,
    DriverTimeout,
    Mode,
    Observation,
    Transfer,
)

__all__ = [
    "RESPONSE_ENCODING",
    "Adma2Desc",
    "AdmaOptions",
    "AdmaPlan",
    "CardInfo",
    "CommandResult",
    "Controller",
    "DriverError",
    "DriverTimeout",
    "Event",
    "HostDriver",
    "Mode",
    "Observation",
    "RecordingTarget",
    "Transfer",
    "first_difference",
    "plan_adma2",
]
