"""Helpers shared by the GUI tests."""


def wait_samples(qtbot, window, n, timeout=6000):
    start = window.state.samples_seen
    qtbot.waitUntil(lambda: window.state.samples_seen >= start + n, timeout=timeout)
