"""The desktop live monitor (issue 7): connect a walker, watch recognition live, record,
replay.

Threads: the link's reader thread decodes (host/link.py) and hands LinkBatches to
sinks; ``processing.ProcessingWorker`` turns them into display chunks (features,
posteriors) on its own thread; ``RecorderThread`` writes HDF5 on its own thread; the
GUI thread only drains finished chunks into preallocated ring buffers on a QTimer and
redraws. ``controller.MonitorController`` wires these together and has no widgets.

Entry point: ``host.gui.app.run_monitor`` (``walkerlab monitor``); ``app.MainWindow``
is the window, with its parts in ``session_actions``, ``view_navigation`` and
``menus``.
"""
