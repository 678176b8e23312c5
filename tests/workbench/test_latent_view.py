"""The workbench's Latent map tab (pytest-qt, offscreen): map a session, click a point."""
import os

import numpy as np
from PySide6 import QtCore


def test_latent_map_click_seeks_recording_to_window(qtbot, open_bench, exp2_paths):
    bench = open_bench(exp2_paths[:1])
    view = bench.latent_view
    bench.tabs.setCurrentWidget(view)
    assert view.map_selected()
    qtbot.waitUntil(lambda: not view.busy, timeout=600_000)
    assert view.errors == [] and not view.showing_hint
    m = view.map
    assert m.Z.shape == (len(m.windows.labels), 4)
    assert len(view.scatter_view.legend_names()) == len(set(m.windows.labels))
    for plot in (view.scatter_view, view.trace_view):  # legends beside the data
        qtbot.waitUntil(lambda: not plot.legend_overlaps_data(), timeout=60_000)
    assert set(m.windows.labels) <= {"NTW", "ST", "WF", "TL", "TR", "WB", "TRS", "GUR", "GDR", "SW", "RT",
                                      "GUC", "GDC", ""}
    qtbot.wait(50)
    # a real mouse click on the point of window k
    k = len(m.Z) // 2
    vb = view.scatter_view.getPlotItem().getViewBox()
    vb.setRange(xRange=(m.Z[:, 0].min(), m.Z[:, 0].max()), yRange=(m.Z[:, 1].min(), m.Z[:, 1].max()))
    qtbot.wait(50)
    scene_pt = vb.mapViewToScene(QtCore.QPointF(m.Z[k, 0], m.Z[k, 1]))
    widget_pt = view.scatter_view.mapFromScene(scene_pt)
    with qtbot.waitSignal(view.window_selected, timeout=600_000) as sig:
        qtbot.mouseClick(view.scatter_view.viewport(), QtCore.Qt.MouseButton.LeftButton, pos=widget_pt)
    index, t0, t1 = sig.args
    # the clicked point is window k or one drawn on top of it at the same place
    assert np.allclose(m.Z[index, :2], m.Z[k, :2], atol=0.05 * np.ptp(m.Z[:, :2], axis=0).max())
    assert view.current == index
    assert view.cursor.value() == t0 == m.windows.t_start[index]
    assert view.region.getRegion() == (t0, t1)
    out = os.environ.get("WALKERLAB_SCREENSHOT_DIR")
    if out:
        view.grab().save(os.path.join(out, "workbench-latent-map.png"))


def test_latent_map_without_selection_says_so(qtbot, tmp_path):
    from host.workbench.latent_view import LatentMapView

    view = LatentMapView(lambda: [])
    qtbot.addWidget(view)
    assert not view.map_selected()
    assert "No recording selected" in view.errors[0]
