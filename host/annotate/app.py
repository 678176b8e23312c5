"""`walkerlab annotate`: open the annotator window (or save a screenshot of it)."""
from __future__ import annotations

import os

from host.errors import UserError


def run_annotator(path, videos=(), label_set: str | None = None, annotator: str = "",
                  screenshot: str | None = None, cursor_s: float | None = None,
                  theme: str | None = None) -> int:
    """Run the annotator until its window closes. screenshot: save a PNG of the
    window (after the cursor is put at cursor_s) and quit."""
    from PySide6 import QtCore

    from host.annotate.labels import label_set_from_text
    from host.annotate.session import AnnotationSession
    from host.annotate.window import AnnotatorWindow
    from host.gui.startup import check_screenshot_path, qt_application
    from host.gui.theme import apply_application_theme

    if len(videos) > 2:
        raise UserError("at most two videos (rear and forward camera)")
    check_screenshot_path(screenshot)
    chosen = label_set_from_text(label_set) if label_set else None
    app = qt_application(theme)
    app.setStyle("Fusion")
    apply_application_theme(app)
    session = AnnotationSession(path, videos)
    window = AnnotatorWindow(session, chosen, annotator or os.environ.get("USER", ""))
    window.resize(1500, 860)
    window.show()
    if cursor_s is not None:
        window.set_cursor(cursor_s)
    if screenshot:
        app.processEvents()
        ok = window.grab().save(screenshot)
        window.close()
        if not ok:
            raise UserError("cannot write %s" % screenshot)
        return 0
    QtCore.QTimer.singleShot(0, window.raise_)
    app.exec()
    return 0
