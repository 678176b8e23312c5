"""A plot with its legend beside it, never over the data."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets


def side_legend(widget: pg.GraphicsLayoutWidget, col: int, text_size: str = "9pt"
                ) -> pg.LegendItem:
    """A legend in column ``col`` of ``widget``'s first row: beside the plots, at the
    top, at its natural size (a stretched legend spreads its rows apart)."""
    legend = pg.LegendItem(labelTextSize=text_size, verSpacing=-4)
    legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Fixed,
                         QtWidgets.QSizePolicy.Policy.Fixed)
    widget.ci.addItem(legend, row=0, col=col)
    widget.ci.layout.setAlignment(legend, QtCore.Qt.AlignmentFlag.AlignTop)
    return legend


class LegendPlot(pg.GraphicsLayoutWidget):
    """One PlotItem (``plot``) and, in the layout column to its right, its legend.

    Items added with a ``name`` (``plot.plot(..., name=...)``, or ``pg.PlotDataItem``
    / ``ScatterPlotItem`` given ``name``) are listed in ``legend``; the legend takes
    the room it needs and the plot the rest, so no entry covers a data point.
    """

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.plot = self.addPlot(row=0, col=0)
        self.legend = side_legend(self, 1)
        self.plot.legend = self.legend  # plot(..., name=) entries land here
        self.ci.layout.setColumnStretchFactor(0, 1)
        self.ci.layout.setColumnStretchFactor(1, 0)

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
