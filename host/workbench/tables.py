"""Table cells and number formats the workbench's tables share."""
from __future__ import annotations

import math

from PySide6 import QtCore, QtWidgets


def table_item(text, align_right: bool = False, tip: str = "") -> QtWidgets.QTableWidgetItem:
    """A read-only cell, right-aligned for numbers, with an optional tooltip."""
    it = QtWidgets.QTableWidgetItem(text)
    it.setFlags(it.flags() & ~QtCore.Qt.ItemFlag.ItemIsEditable)
    if align_right:
        it.setTextAlignment(QtCore.Qt.AlignmentFlag.AlignRight
                            | QtCore.Qt.AlignmentFlag.AlignVCenter)
    if tip:
        it.setToolTip(tip)
    return it


def row_table(columns: int = 0) -> QtWidgets.QTableWidget:
    """A table of things, one per row, one selected at a time, no row numbers, columns
    sized to their contents."""
    t = QtWidgets.QTableWidget(0, columns)
    t.verticalHeader().setVisible(False)
    t.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
    t.horizontalHeader().setSectionResizeMode(
        QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
    return t


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def percent(x) -> str:
    """A share as "12.3%" (a dash when missing)."""
    return "—" if _missing(x) else "%.1f%%" % (100 * x)


def frame_count(n) -> str:
    """A frame count short enough for a confusion cell (12345 -> 12.3k)."""
    return "%d" % n if n < 10000 else "%.1fk" % (n / 1000) if n < 1e6 else "%.1fM" % (n / 1e6)


def number(x, fmt="%.3f") -> str:
    """A number in ``fmt`` (a dash when missing)."""
    return "—" if _missing(x) else fmt % x
