"""The annotator: label recordings against camera video (`walkerlab annotate`).

video.py (frame-accurate PyAV reading), sync.py (taps, anchors, clock fit),
labels.py (label sets and edits), agreement.py, interchange.py (ELAN .eaf, CSV),
session.py (recording + videos + tracks), window.py (the Qt window; its parts in
track_editing.py, sync_panel.py, shortcuts.py, track_view.py, video_view.py),
app.py (entry point),
simulated_video.py (synthetic video of simulated sessions). Label and sync writes go
through host/recording/labels.py. User guide: docs/annotator.md.
"""
