"""Serial ports the monitor offers, plus the built-in virtual walker."""
from __future__ import annotations

from dataclasses import dataclass

VIRTUAL = "virtual"


@dataclass(frozen=True)
class PortChoice:
    device: str  # port path, or VIRTUAL
    description: str
    usb: bool = False  # a USB serial device (what a walker is): preferred over built-ins

    @property
    def is_virtual(self) -> bool:
        return self.device == VIRTUAL

    @property
    def label(self) -> str:
        if self.is_virtual:
            return "Virtual walker (simulated)"
        if self.description and self.description not in ("n/a", self.device):
            return "%s  (%s)" % (self.device, self.description)
        return self.device


def list_port_choices(comports=None) -> list[PortChoice]:
    """Serial ports with descriptions, USB ones first; the virtual walker last."""
    if comports is None:
        try:
            from serial.tools import list_ports
            comports = list_ports.comports()
        except Exception:  # enumeration can fail on odd systems: offer the virtual one
            comports = []
    found = [PortChoice(p.device, p.description or "", getattr(p, "vid", None) is not None)
             for p in comports]
    found.sort(key=lambda c: (not c.usb, c.device))
    return found + [PortChoice(VIRTUAL, "a simulated walker served in this process")]


def default_choice(choices: list[PortChoice], preferred: str | None = None) -> PortChoice:
    """The port to preselect: `preferred` if listed, else a plugged-in USB serial device,
    else the virtual walker."""
    for c in choices:
        if preferred and c.device == preferred:
            return c
    for c in choices:
        if c.usb:
            return c
    return next(c for c in choices if c.is_virtual)
