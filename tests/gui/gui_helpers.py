"""Helpers shared by the GUI tests."""

# A ceiling against hangs, never a speed requirement: the virtual walker streams in
# real time, and a busy machine may take many times longer than the data's duration.
HANG_GUARD_MS = 120_000


def wait_samples(qtbot, window, n, timeout=HANG_GUARD_MS):
    """Wait until the window has shown ``n`` more samples."""
    start = window.state.samples_seen
    qtbot.waitUntil(lambda: window.state.samples_seen >= start + n, timeout=timeout)
