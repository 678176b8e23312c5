"""Live monitor (issue 7): redraw cost, display latency, memory over a long session.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_gui.py [--minutes 60]
        [--only redraw,breakdown,latency,memory] [--model MODEL.npz] [--redraws 1000]
        [--quick]

1. redraw: ms per frame to bring 12 curves up to date (30 s window at 100 and 200 Hz,
   from the ring buffers) plus the posterior ribbon (10 classes), and to paint them
   (a synchronous repaint of the whole widget, rendered on the CPU); min/median/max
   over 1,000 redraws; the same for the whole monitor window, and plain pyqtgraph
   (PlotDataItems with clipToView and 'peak' auto-downsampling) for scale. Goals
   (issue 22): < 8 ms at 100 Hz, < 12 ms at 200 Hz. Wall time; the CPU time of the GUI
   thread beside it (the wall time includes waits for a core when the machine is
   shared).
   breakdown: where a 30 s / 100 Hz redraw's CPU time goes: the setup by step (x range,
   curves, ribbon, the rest) and the paint by item group (each group hidden in turn
   for blocks of redraws, interleaved with full ones; "rest" is with all hidden:
   background, layout, the remaining pyqtgraph items).
2. latency: a virtual walker at 100 Hz on a pty, the real window with a model; for
   every redraw, from the arrival of a frame at the serial reader thread to the end of
   the synchronous repaint that shows its posterior. Goal: < 50 ms.
3. memory: an hour of simulated 100 Hz data replayed at 20x through the window (the
   replay thread, the processing thread, the redraw timer); RSS sampled as it runs.
   Goal: no growth beyond the ring buffers, which are allocated up front.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from PySide6 import QtWidgets  # noqa: E402

RATE_HZ = 100
WINDOW_S = 30.0


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def pct(values, q) -> float:
    return float(np.percentile(np.asarray(values), q))


def train_small_model(folder: str) -> str:
    from host.datasets import load_sessions
    from host.simulate import simulate_to_files
    from recognizers.hmm_recognizer import HMMRecognizer

    paths = simulate_to_files("free", 4, 100, folder, duration_s=300, progress=False)
    sessions = load_sessions(paths, "cop")
    model = HMMRecognizer().fit([s.X for s in sessions], [s.y for s in sessions],
                                feature_set="cop")
    model.sample_rate_hz_ = float(RATE_HZ)  # as `walkerlab train` records it
    return str(model.save(os.path.join(folder, "bench-model.npz")))


def make_app():
    from PySide6 import QtCore

    from host.gui.startup import _qt_message

    os.environ.setdefault("WALKERLAB_SETTINGS",
                          os.path.join(tempfile.gettempdir(), "walkerlab-bench.ini"))
    QtCore.qInstallMessageHandler(_qt_message)  # no offscreen-platform noise
    return QtWidgets.QApplication.instance() or QtWidgets.QApplication([])


# ---- 1. redraw cost ----------------------------------------------------------------------
def _synthetic(n: int, t0: float, n_cols: int, rng, rate: float = RATE_HZ) -> np.ndarray:
    t = t0 + np.arange(n) / rate
    rows = np.empty((n, 1 + n_cols))
    rows[:, 0] = t
    for j in range(n_cols):
        rows[:, 1 + j] = 20 * np.sin(t * (0.7 + 0.3 * j)) + rng.normal(0, 2, n)
    return rows


def _posterior(n: int, t0: float, k: int, rng, rate: float = RATE_HZ) -> np.ndarray:
    t = t0 + np.arange(n) / rate
    seg = (t // 2.0).astype(int)  # a new dominant class every 2 s
    p = np.full((n, k), 0.02)
    p[np.arange(n), seg % k] = 1.0
    p += rng.random((n, k)) * 0.05
    p /= p.sum(axis=1, keepdims=True)
    return np.column_stack([t, p])


CLASSES = ("NTW", "ST", "WF", "TL", "TR", "WB", "RT", "SW", "GUR", "GDR")


def _plots_streaming(window_s: float, rate: float, fps: float):
    """A shown LivePlots (12 curves in 4 plots, 1100 x 720) over a full window of
    synthetic data, and a function that appends one redraw's worth (rate / fps rows)."""
    from host.gui.display_state import DisplayState
    from host.gui.live_plots import Channel, LivePlots, PlotRow
    from host.gui.ring_buffer import RingBuffer
    from host.gui.theme import LIGHT

    make_app()
    colours = LIGHT.accel + LIGHT.legs + (LIGHT.speed, LIGHT.cop, "#555555", "#888888",
                                          "#aa5500")
    rows = tuple(PlotRow("row %d" % r, "u", tuple(
        Channel("c%d" % (3 * r + j), 1 + 3 * r + j, lambda th, c=colours[3 * r + j]: c)
        for j in range(3)), min_span=1.0) for r in range(4))
    plots = LivePlots(rows=rows)
    plots.resize(1100, 720)
    plots.show()
    state = DisplayState()
    state.samples = RingBuffer(state.history_rows, 13)
    state.set_classes(CLASSES)
    rng = np.random.default_rng(0)
    n0 = int(window_s * rate)
    state.samples.append(_synthetic(n0, 0.0, 12, rng, rate))
    state.posterior.append(_posterior(n0, 0.0, len(CLASSES), rng, rate))
    plots.set_classes(CLASSES)
    plots.set_window(window_s)
    clock = {"t": n0 / rate, "carry": 0.0}

    def advance() -> None:
        clock["carry"] += rate / fps
        n = int(clock["carry"])
        clock["carry"] -= n
        state.samples.append(_synthetic(n, clock["t"], 12, rng, rate))
        state.posterior.append(_posterior(n, clock["t"], len(CLASSES), rng, rate))
        clock["t"] += n / rate
        state.generation += 1

    QtWidgets.QApplication.processEvents()
    return plots, state, advance


def bench_redraw(frames: int = 1000, fps: float = 60.0, cases=((WINDOW_S, 100.0),
                 (WINDOW_S, 200.0), (10.0, 100.0)), baseline: bool = True) -> dict:
    """Per redraw: refresh (12 curves, x range, y fit, grid, ribbon) plus a synchronous
    repaint of the whole plot widget; min/median/max over `frames`."""
    results = {}
    for window_s, rate in cases:
        label = "12 curves + ribbon, %g s at %g Hz" % (window_s, rate)
        n_curves, n0 = 12, int(window_s * rate)
        plots, state, advance = _plots_streaming(window_s, rate, fps)
        set_ms, paint_ms, cpu_ms = [], [], []
        for i in range(frames + 20):
            advance()
            c0 = time.thread_time()
            a = time.perf_counter()
            plots.refresh(state)
            b = time.perf_counter()
            plots.viewport().repaint()  # what the event loop does after the timer tick
            c = time.perf_counter()
            c1 = time.thread_time()
            if i >= 20:
                set_ms.append(1e3 * (b - a))
                paint_ms.append(1e3 * (c - b))
                cpu_ms.append(1e3 * (c1 - c0))
        tot = [s + p for s, p in zip(set_ms, paint_ms)]
        results[label] = {"curves": n_curves, "points_per_curve": n0, "frames": frames,
                          "set_ms": statistics.median(set_ms),
                          "paint_ms": statistics.median(paint_ms),
                          "total_ms": statistics.median(tot), "min_ms": min(tot),
                          "max_ms": max(tot), "p95_ms": pct(tot, 95),
                          "cpu_ms": statistics.median(cpu_ms), "cpu_min_ms": min(cpu_ms),
                          "cpu_max_ms": max(cpu_ms)}
        plots.close()
        plots.deleteLater()
    if baseline:
        n_base = min(frames, 300)
        results["whole window, 30 s"] = bench_window_redraw(n_base, fps)
        results["plain pyqtgraph, 30 s"] = bench_baseline(n_base, fps)
    return results


def bench_breakdown(blocks: int = 4, per_block: int = 40, fps: float = 60.0) -> dict:
    """CPU ms of a 30 s / 100 Hz redraw by part (see the module docstring)."""
    plots, state, advance = _plots_streaming(WINDOW_S, RATE_HZ, fps)
    ribbon = plots.ribbon
    set_parts = {"x range": [(plots, "set_x_range")],
                 "curves": [(plots, "_draw_trace"), (plots, "_decimate"),
                            (plots, "_fit_y"), (plots, "_update_grids")],
                 "ribbon": [(ribbon, "update_live"), (ribbon, "update"),
                            (plots, "_ribbon_labels"), (plots, "_draw_ribbon")]}
    for cs in plots.curves:  # the old drawing: setData of every live curve
        set_parts["curves"] += [(c, "setData") for c in cs]
    spent = {name: 0.0 for name in set_parts}
    depth = {"n": 0}

    def timed(name, fn):
        def run(*args, **kwargs):
            depth["n"] += 1
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                depth["n"] -= 1
                if depth["n"] == 0:  # outermost timed call only
                    spent[name] += time.thread_time() - c0
        return run

    for name, targets in set_parts.items():
        for obj, attr in targets:
            if hasattr(obj, attr):
                setattr(obj, attr, timed(name, getattr(obj, attr)))
    traces = getattr(plots, "traces", None) or [c for cs in plots.curves for c in cs]
    groups = {
        "curves": list(traces),
        "grids": [g for g in plots.grids if g.isVisible()],
        "ribbon": [getattr(ribbon, "live_image", None) or ribbon.image],
        "legends": list(plots.legends),
        "left axes": [p.getAxis("left") for p in (*plots.plots, plots.ribbon_plot)],
        "time axis": [plots.ribbon_plot.getAxis("bottom")],
    }
    groups = {name: items for name, items in groups.items() if items}
    every = [item for items in groups.values() for item in items]
    for _ in range(30):
        advance()
        plots.refresh(state)
        plots.viewport().repaint()

    def block(hidden) -> float:
        for item in hidden:
            item.setVisible(False)
        out = []
        for _ in range(per_block):
            advance()
            plots.refresh(state)
            plots.viewport().repaint()  # repaint the new frame once, then time a repaint
            c0 = time.thread_time()
            plots.viewport().repaint()
            out.append(time.thread_time() - c0)
        for item in hidden:
            item.setVisible(True)
        return statistics.median(out)

    full, without, rest = [], {name: [] for name in groups}, []
    for _ in range(blocks):
        full.append(block([]))
        for name, items in groups.items():
            without[name].append(block(items))
        rest.append(block(every))
    paint = statistics.median(full)
    # the setup, timed over separate frames
    for name in spent:
        spent[name] = 0.0
    set_total = []
    n = blocks * per_block
    for _ in range(n):
        advance()
        c0 = time.thread_time()
        plots.refresh(state)
        set_total.append(time.thread_time() - c0)
        plots.viewport().repaint()
    set_ms = {name: 1e3 * v / n for name, v in spent.items()}
    set_ms["other"] = 1e3 * sum(set_total) / n - sum(set_ms.values())
    plots.close()
    plots.deleteLater()
    return {"set_ms": set_ms, "set_total_ms": 1e3 * sum(set_total) / n,
            "paint_ms": 1e3 * paint,
            "paint_parts_ms": {name: 1e3 * (paint - statistics.median(v))
                               for name, v in without.items()},
            "paint_rest_ms": 1e3 * statistics.median(rest)}


def bench_baseline(frames: int = 300, fps: float = 30.0) -> dict:
    """Plain pyqtgraph for scale: 12 PlotDataItems with default options (4 linked plots,
    one time axis), 30 s at 100 Hz scrolling, nothing else on screen."""
    import pyqtgraph as pg

    make_app()
    w = pg.GraphicsLayoutWidget()
    w.resize(1100, 720)
    w.show()
    plots = [w.addPlot(row=i, col=0) for i in range(4)]
    rng = np.random.default_rng(0)
    curves = []
    for i, p in enumerate(plots):
        p.vb.disableAutoRange()
        p.setYRange(-25, 25)
        if i < 3:
            p.hideAxis("bottom")
            p.setXLink(plots[3])
        for j in range(3):
            c = p.plot(pen=pg.mkPen(pg.intColor(j), width=1))
            c.setClipToView(True)
            c.setDownsampling(auto=True, method="peak")
            curves.append(c)
    QtWidgets.QApplication.processEvents()
    n = int(WINDOW_S * RATE_HZ)
    x = np.arange(n) / RATE_HZ
    ys = [20 * np.sin(x * (0.7 + 0.3 * j)) + rng.normal(0, 2, n) for j in range(12)]
    times = []
    for f in range(frames + 20):
        x = x + 1 / fps
        a = time.perf_counter()
        plots[3].setXRange(x[0], x[-1], padding=0)
        for c, y in zip(curves, ys):
            c.setData(x, y)
        w.viewport().repaint()
        if f >= 20:
            times.append(1e3 * (time.perf_counter() - a))
    w.close()
    w.deleteLater()
    return {"curves": 12, "points_per_curve": n, "total_ms": statistics.median(times),
            "p95_ms": pct(times, 95)}


def bench_window_redraw(frames: int, fps: float) -> dict:
    """The monitor window as shipped (8 curves, ribbon, footprint, legend), 1400x900."""
    from host.gui.app import MainWindow
    from host.gui.controller import MonitorController
    from host.gui.processing import N_VALUES, DisplayChunk

    window = MainWindow(MonitorController(), restore_layout=False, persist=False)
    window.timer.stop()
    window.slow_timer.stop()
    window.resize(1400, 900)
    window.show()
    classes = ("NTW", "ST", "WF", "TL", "TR", "WB", "RT", "SW", "GUR", "GDR")
    rng = np.random.default_rng(1)

    def chunk(n, t0):
        rows = _synthetic(n, t0, N_VALUES, rng)
        post = _posterior(n, t0, len(classes), rng)
        return DisplayChunk(rows[:, 0], rows[:, 1:], post[:, 1:], classes, time.time(),
                            n_samples=n)

    n0 = int(WINDOW_S * RATE_HZ)
    window.state.append(chunk(n0, 0.0))
    t_next = n0 / RATE_HZ
    per_frame, carry = RATE_HZ / fps, 0.0
    times = {"event loop": [], "grab": []}
    for mode in ("event loop", "grab"):
        for i in range(frames + 20):
            carry += per_frame
            n = int(carry)
            carry -= n
            window.state.append(chunk(n, t_next))
            t_next += n / RATE_HZ
            a = time.perf_counter()
            window.tick()
            if mode == "grab":
                window.grab()  # every widget of the window, whether it changed or not
            else:
                QtWidgets.QApplication.processEvents()  # paints what the tick changed
            if i >= 20:
                times[mode].append(1e3 * (time.perf_counter() - a))
    window.close()
    window.deleteLater()
    return {"curves": 8, "points_per_curve": n0,
            "total_ms": statistics.median(times["event loop"]),
            "p95_ms": pct(times["event loop"], 95),
            "grab_ms": statistics.median(times["grab"])}


# ---- 2. latency ---------------------------------------------------------------------------
def bench_latency(model_path: str, seconds: float = 15.0, redraw_hz: float = 30.0) -> dict:
    from host.gui.app import MainWindow
    from host.gui.controller import MonitorController

    app = make_app()
    controller = MonitorController(virtual_rate_hz=RATE_HZ)
    controller.load_model(model_path)
    window = MainWindow(controller, restore_layout=False, persist=False,
                        redraw_hz=redraw_hz)
    window.resize(1400, 900)
    window.show()
    newest, oldest, cpu = [], [], []
    recording = {"on": False}
    orig_poll = controller.poll
    orig_tick = window.tick
    pending = {}

    def poll():
        result = orig_poll()
        arrivals = [c.arrival for c in result.chunks
                    if c.n_samples and c.posterior is not None]
        pending["arrivals"] = arrivals
        return result

    def tick():
        orig_tick()
        arrivals = pending.pop("arrivals", None)
        if arrivals and recording["on"]:
            window.plots.repaint()  # paint now: the posterior is on screen after this
            now = time.time()
            newest.append(1e3 * (now - max(arrivals)))
            oldest.append(1e3 * (now - min(arrivals)))

    controller.poll = poll
    window.timer.timeout.disconnect()
    window.timer.timeout.connect(tick)
    window.connect_to("virtual")
    end = time.monotonic() + 2.0
    while time.monotonic() < end:  # warm-up: numba, first INFO, ring fill
        app.processEvents()
        time.sleep(0.002)
    recording["on"] = True
    c0, w0 = time.process_time(), time.monotonic()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()
        time.sleep(0.001)
    cpu = (time.process_time() - c0) / (time.monotonic() - w0)
    health = controller.health()
    window.close()
    window.deleteLater()
    return {"redraw_hz": redraw_hz, "redraws": len(newest),
            "newest_median_ms": statistics.median(newest), "newest_p95_ms": pct(newest, 95),
            "oldest_median_ms": statistics.median(oldest), "oldest_p95_ms": pct(oldest, 95),
            "oldest_max_ms": max(oldest), "cpu_fraction": cpu,
            "frames": health["frames"], "drops": health["queue_drops"]}


# ---- 3. memory ----------------------------------------------------------------------------
def bench_memory(model_path: str, minutes: float = 60.0, speed: float = 20.0) -> dict:
    import subprocess

    from host.gui.app import MainWindow
    from host.gui.controller import MonitorController

    folder = tempfile.mkdtemp(prefix="walkerlab-bench-")
    t = time.monotonic()
    # Simulate in a child process, so the simulator's memory is not in this one's RSS.
    subprocess.run([sys.executable, "-m", "host.cli", "simulate", "--course", "free",
                    "--subjects", "1", "--seed", "7", "--rate", str(RATE_HZ),
                    "--duration", str(minutes * 60), "--out", folder, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    path = os.path.join(folder, "free_subject007.h5")
    simulate_s = time.monotonic() - t
    app = make_app()
    controller = MonitorController()
    controller.load_model(model_path)
    window = MainWindow(controller, restore_layout=False, persist=False)
    window.resize(1400, 900)
    window.show()
    rss0 = rss_mb()
    window.open_replay(str(path), speed=speed)
    samples_rss = []
    next_sample = time.monotonic()
    t0 = time.monotonic()
    while not controller.replay_finished:
        app.processEvents()
        time.sleep(0.002)
        if time.monotonic() >= next_sample:
            r = controller.replay
            samples_rss.append(((r.position - r.first_host_time) / 60.0, rss_mb()))
            next_sample += 5.0
    for _ in range(20):
        app.processEvents()
        time.sleep(0.01)
    wall = time.monotonic() - t0
    samples_rss.append((minutes, rss_mb()))
    state = window.state
    ring_mb = (state.samples.nbytes + (state.posterior.nbytes if state.posterior else 0)
               + state.truth.ring.nbytes + state.device.ring.nbytes) / 2**20
    shown = state.samples_seen
    drops = controller.health()["display_drops"]
    window.close()
    window.deleteLater()
    os.remove(path)
    os.rmdir(folder)
    # growth after the first ring-filling stretch (a ring fills in 65536 rows: ~11 min)
    after_fill = [m for s, m in samples_rss if s >= min(12.0, minutes / 2)]
    return {"stream_minutes": minutes, "speed": speed, "wall_s": wall,
            "simulate_s": simulate_s, "rss_before_mb": rss0,
            "rss_series": samples_rss, "rss_end_mb": samples_rss[-1][1],
            "rss_growth_after_fill_mb": (max(after_fill) - after_fill[0]) if after_fill
            else 0.0, "ring_mb": ring_mb, "samples_shown": shown, "display_drops": drops}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0,
                        help="stream length of the memory run (default an hour)")
    parser.add_argument("--speed", type=float, default=20.0)
    parser.add_argument("--latency-seconds", type=float, default=15.0)
    parser.add_argument("--only", default="redraw,breakdown,latency,memory")
    parser.add_argument("--redraws", type=int, default=1000,
                        help="redraws per case (min/median/max over them)")
    parser.add_argument("--quick", action="store_true",
                        help="CI smoke run: 40 redraws per case, no latency/memory runs")
    parser.add_argument("--model", default=None, help="recognizer (default: train one)")
    parser.add_argument("--quiet-header", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # in order with the memory subprocess
    only = set(args.only.split(","))
    if args.quick:
        only &= {"redraw", "breakdown"}
    import platform

    from PySide6 import __version__ as pyside
    import pyqtgraph

    if not args.quiet_header:
        print("python %s, PySide6 %s, pyqtgraph %s, Qt platform %s, %d CPUs"
              % (platform.python_version(), pyside, pyqtgraph.__version__,
                 os.environ.get("QT_QPA_PLATFORM"), os.cpu_count() or 0), flush=True)
    model = args.model
    if model is None and only & {"latency", "memory"}:
        model = train_small_model(tempfile.mkdtemp(prefix="walkerlab-bench-model-"))
    if "redraw" in only:
        r = bench_redraw(frames=40 if args.quick else args.redraws, baseline=not args.quick)
        for label, v in r.items():
            if "set_ms" in v:
                print("redraw %-34s %2d curves x %5d pts, %d redraws: min %.1f / median "
                      "%.1f / max %.1f ms (set %.1f + paint %.1f), p95 %.1f; CPU min %.1f / "
                      "median %.1f / max %.1f ms"
                      % (label, v["curves"], v["points_per_curve"], v["frames"],
                         v["min_ms"], v["total_ms"], v["max_ms"], v["set_ms"],
                         v["paint_ms"], v["p95_ms"], v["cpu_min_ms"], v["cpu_ms"],
                         v["cpu_max_ms"]))
                continue
            if "grab_ms" in v:
                extra = " (tick + event-loop paint; full-window grab %.1f)" % v["grab_ms"]
            else:
                extra = " (setData + repaint, defaults)"
            print("redraw %-34s %2d curves x %5d pts: %.1f ms/frame median%s, p95 %.1f ms"
                  % (label, v["curves"], v["points_per_curve"], v["total_ms"], extra,
                     v["p95_ms"]))
    if "breakdown" in only:
        v = bench_breakdown(blocks=1 if args.quick else 4, per_block=10 if args.quick
                            else 40)
        print("breakdown (CPU ms per redraw, 30 s at 100 Hz): set %.2f = %s; paint %.2f = "
              "%s, rest %.2f" % (
                  v["set_total_ms"], " + ".join("%s %.2f" % kv for kv in v["set_ms"].items()),
                  v["paint_ms"], " + ".join("%s %.2f" % kv
                                            for kv in v["paint_parts_ms"].items()),
                  v["paint_rest_ms"]))
    if "latency" in only:
        for hz in (30.0, 60.0):
            v = bench_latency(model, args.latency_seconds, hz)
            print("latency at %2.0f Hz redraw (%d redraws, %d frames, %d drops): "
                  "newest frame %.1f ms median / %.1f p95; oldest frame %.1f ms median / "
                  "%.1f p95 / %.1f max; process CPU %.0f%% of a core"
                  % (hz, v["redraws"], v["frames"], v["drops"], v["newest_median_ms"],
                     v["newest_p95_ms"], v["oldest_median_ms"], v["oldest_p95_ms"],
                     v["oldest_max_ms"], 100 * v["cpu_fraction"]))
    if "memory" in only and len(only) > 1:  # a fresh process: RSS of the monitor alone
        import subprocess
        subprocess.run([sys.executable, os.path.abspath(__file__), "--only", "memory",
                        "--model", model, "--minutes", str(args.minutes), "--speed",
                        str(args.speed), "--quiet-header"], check=True)
    elif "memory" in only:
        v = bench_memory(model, args.minutes, args.speed)
        series = "  ".join("%.0f min: %.0f MB" % (s, m) for s, m in v["rss_series"][::6])
        print("memory: %.0f min of %d Hz data at %gx in %.0f s wall; %d samples shown, "
              "%d display drops" % (v["stream_minutes"], RATE_HZ, v["speed"], v["wall_s"],
                                    v["samples_shown"], v["display_drops"]))
        print("  RSS before %.0f MB, end %.0f MB; growth after the rings filled %.1f MB; "
              "rings %.1f MB" % (v["rss_before_mb"], v["rss_end_mb"],
                                 v["rss_growth_after_fill_mb"], v["ring_mb"]))
        print("  RSS over stream time: " + series, flush=True)


if __name__ == "__main__":
    main()
