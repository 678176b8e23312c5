"""A plot with its legend beside it, never over the data."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets


class LegendPlot(pg.GraphicsLayoutWidget):
    """One PlotItem (``plot``) and, in the layout column to its right, its legend.

    Items added with a ``name`` (``plot.plot(..., name=...)``, or ``pg.PlotDataItem``
    / ``ScatterPlotItem`` given ``name``) are listed in ``legend``; the legend takes
    the room it needs and the plot the rest, so no entry covers a data point.
    """

    def __init__(self, parent=None, legend_width: int | None = None) -> None:
        super().__init__(parent)
        self.plot = self.addPlot(row=0, col=0)
        self.legend = pg.LegendItem(labelTextSize="9pt", verSpacing=-4)
        # its natural size, at the top: a stretched legend spreads its rows apart
        self.legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Fixed,
                                  QtWidgets.QSizePolicy.Policy.Fixed)
        self.ci.addItem(self.legend, row=0, col=1)
        self.ci.layout.setAlignment(self.legend, QtCore.Qt.AlignmentFlag.AlignTop)
        self.plot.legend = self.legend  # plot(..., name=) entries land here
        self.ci.layout.setColumnStretchFactor(0, 1)
        self.ci.layout.setColumnStretchFactor(1, 0)
        if legend_width is not None:
            self.ci.layout.setColumnFixedWidth(1, legend_width)

    def set_theme(self, theme) -> None:
        """Background, axes and legend text in a ``host.gui.theme.Theme``'s colours."""
        self.setBackground(theme.background)
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setPen(theme.muted)
            self.plot.getAxis(axis).setTextPen(theme.foreground)
        self.plot.titleLabel.setText(self.plot.titleLabel.text, color=theme.foreground)
        self.legend.setLabelTextColor(theme.foreground)

    def getPlotItem(self) -> pg.PlotItem:
        return self.plot

    def clear_plot(self) -> None:
        """Remove every item and legend entry."""
        self.plot.clear()
        self.legend.clear()

    def legend_names(self) -> list[str]:
        """The legend's entries, top to bottom."""
        return [label.text for _, label in self.legend.items]

    def legend_overlaps_data(self) -> bool:
        """Whether the legend's box meets the data area (a test's question)."""
        view = self.plot.getViewBox().sceneBoundingRect()
        return self.legend.sceneBoundingRect().intersects(view)
