"""Colours: light or dark following the system, one colour per activity and channel.

The scheme follows the system (QStyleHints.colorScheme, else the palette's lightness);
$WALKERLAB_THEME=dark|light overrides it (screenshots, platforms that report nothing).
Channel and activity colours come from Tableau-10-like qualitative palettes that read
on both white and dark grey backgrounds.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from PySide6 import QtCore, QtGui, QtWidgets

THEME_ENV = "WALKERLAB_THEME"

# One fixed colour per activity code of domain/activities.py (thesis Tables 6.1-6.2),
# so a class keeps its colour across models, recordings and runs.
ACTIVITY_COLORS = {
    "NTW": "#9d9d9d",  # not touching the walker: neutral grey
    "ST": "#4e79a7",   # standing: blue
    "WF": "#59a14f",   # walking forward: green
    "TL": "#edc948",   # turn left: yellow
    "TR": "#f28e2b",   # turn right: orange
    "WB": "#e15759",   # walking backwards: red
    "TRS": "#b07aa1",  # transfer: purple
    "GUR": "#76b7b2",  # up a ramp: teal
    "GDR": "#2f6f8f",  # down a ramp: dark teal
    "SW": "#ff9da7",   # sitting on the walker: pink
    "RT": "#9c755f",   # reaching: brown
    "GUC": "#8cd17d",  # up a curb: light green
    "GDC": "#c05a8a",  # down a curb: magenta
}
_EXTRA = ("#86bcb6", "#d4a6c8", "#fabfd2", "#b6992d", "#499894", "#d37295", "#a0cbe8",
          "#ffbe7d", "#f1ce63", "#bab0ac")

# Colours of model states that are not activities (topics, discovered regimes), so a
# topic is never mistaken for an activity: vivid where the activity colours are muted.
# Chosen greedily in CIELAB, each as far as possible from every activity colour above
# and from the ones chosen before it, among colours of lightness 35-72 (readable on
# light and dark backgrounds): every one is at least 33 Delta-E (CIE76) from each
# activity colour and from each other (tests/gui/test_theme_colours.py checks).
STATE_COLORS = ("#4b00ff", "#ff00e1", "#1e5ae1", "#ff0000", "#00c300", "#e187ff",
                "#ff0087", "#870fc3", "#783c96", "#0096ff", "#87b400", "#4b5a1e")

ACTIVITY_NAMES = {
    "NTW": "Not touching walker", "ST": "Standing", "WF": "Walking forward",
    "TL": "Turning left", "TR": "Turning right", "WB": "Walking backwards",
    "TRS": "Transfer (sit/stand)", "GUR": "Going up a ramp", "GDR": "Going down a ramp",
    "SW": "Sitting on walker", "RT": "Reaching", "GUC": "Going up a curb",
    "GDC": "Going down a curb",
}


def activity_name(code: str) -> str:
    return ACTIVITY_NAMES.get(code, code)


def class_color(code: str) -> str:
    """The fixed colour of an activity code (unknown codes: a stable pick)."""
    if code in ACTIVITY_COLORS:
        return ACTIVITY_COLORS[code]
    return _EXTRA[sum(code.encode()) % len(_EXTRA)]


def state_color(index: int) -> str:
    """The colour of model state ``index`` (0-based; topics, regimes): never an
    activity's colour. Cycles after ``len(STATE_COLORS)``."""
    return STATE_COLORS[index % len(STATE_COLORS)]


@dataclass(frozen=True)
class Theme:
    dark: bool
    background: str  # plot background
    foreground: str  # axes, text
    muted: str  # secondary text, outlines
    grid_colour: str  # opaque grid lines (cheaper to paint than translucent ones)
    accel: tuple[str, str, str]
    legs: tuple[str, str, str, str]  # FR, FL, RL, RR
    speed: str
    cop: str
    ok: str
    warn: str
    bad: str


LIGHT = Theme(False, "#ffffff", "#303030", "#8a8a8a", "#ececec",
              ("#d62728", "#2ca02c", "#1f77b4"),
              ("#f28e2b", "#9467bd", "#17a2a2", "#e377c2"),
              "#303030", "#d62728", "#2e8b57", "#c77700", "#c62828")
DARK = Theme(True, "#1e1f22", "#dcdcdc", "#8c8c8c", "#303236",
             ("#ff6b6b", "#69d16a", "#5aa9ff"),
             ("#ffa94d", "#c39bff", "#4fd1c5", "#ff8fd0"),
             "#e6e6e6", "#ff6b6b", "#4cc38a", "#f0a030", "#ff6b6b")


def system_prefers_dark(app: QtGui.QGuiApplication | None = None) -> bool:
    forced = os.environ.get(THEME_ENV, "").strip().lower()
    if forced in ("dark", "light"):
        return forced == "dark"
    app = app or QtGui.QGuiApplication.instance()
    if app is None:
        return False
    scheme = app.styleHints().colorScheme()
    if scheme == QtCore.Qt.ColorScheme.Dark:
        return True
    if scheme == QtCore.Qt.ColorScheme.Light:
        return False
    return app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128


def dark_palette() -> QtGui.QPalette:
    """A Fusion dark palette, for platforms that report dark but give a light one."""
    P = QtGui.QPalette
    c = QtGui.QColor
    p = P()
    roles = {
        P.ColorRole.Window: "#2b2d30", P.ColorRole.WindowText: "#dfe1e5",
        P.ColorRole.Base: "#1e1f22", P.ColorRole.AlternateBase: "#2b2d30",
        P.ColorRole.ToolTipBase: "#3c3f41", P.ColorRole.ToolTipText: "#dfe1e5",
        P.ColorRole.Text: "#dfe1e5", P.ColorRole.Button: "#3c3f41",
        P.ColorRole.ButtonText: "#dfe1e5", P.ColorRole.BrightText: "#ff6b6b",
        P.ColorRole.Highlight: "#2f65ca", P.ColorRole.HighlightedText: "#ffffff",
        P.ColorRole.Link: "#589df6", P.ColorRole.PlaceholderText: "#8c8c8c",
        P.ColorRole.Mid: "#4e5157", P.ColorRole.Dark: "#1b1c1e", P.ColorRole.Light: "#505356",
        P.ColorRole.Midlight: "#43454a", P.ColorRole.Shadow: "#111111",
    }
    for role, colour in roles.items():
        p.setColor(role, c(colour))
    for role in (P.ColorRole.WindowText, P.ColorRole.Text, P.ColorRole.ButtonText):
        p.setColor(P.ColorGroup.Disabled, role, c("#6f737a"))
    return p


def apply_application_theme(app: QtWidgets.QApplication) -> Theme:
    """Set the palette for the system's scheme; returns the plot theme to use."""
    dark = system_prefers_dark(app)
    current_dark = app.palette().color(QtGui.QPalette.ColorRole.Window).lightness() < 128
    if dark and not current_dark:
        app.setPalette(dark_palette())
    elif not dark and current_dark:
        app.setPalette(app.style().standardPalette())
    return DARK if dark else LIGHT
