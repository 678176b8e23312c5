"""Evaluation reports: an HTML page with PNG plots and the JSON metrics behind them.

``write_report(DIR, summary)`` takes what ``walkerlab evaluate`` computed
(``{"command", "files", "models": [result, ...]}``, results from
``host.evaluate.evaluate_recordings``) and writes:

* ``metrics.json``: the summary itself (NaN written as null);
* ``accuracy_by_window.png``: accuracy, transition precision and recall against
  the window size for every model side by side (the thesis's Figure 6.5);
* ``per_activity.png``: per-activity accuracy at windows 0 and 25 (Tables 6.12/6.13);
* ``confusion_<n>.png``: each model's confusion matrix;
* ``index.html``: all of it with the command line that reproduces the report.
"""
from __future__ import annotations

import contextlib
import html
import json
import math
import os
import pathlib

import numpy as np

from host.errors import UserError
from host.outputs import check_free, exclusive_output


def json_safe(value):
    """JSON-ready copy: str keys, lists for arrays, NaN/inf as None (valid JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return json_safe(value.tolist())
    return value


def _label(result) -> str:
    params = ", ".join("%s=%s" % kv for kv in sorted(result.get("params", {}).items()))
    return "%s (%s)%s%s" % (result["recognizer"], result["feature_set"],
                            " [%s]" % params if params else "",
                            " variant %s of the same fits" % result["variant"]
                            if result.get("variant") else "")


def _plots(out: pathlib.Path, models: list[dict]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    names = []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharex=True)
    for result in models:
        windows = sorted(int(w) for w in result["accuracy_by_window"])
        acc = [result["accuracy_by_window"][w] for w in windows]
        tr = result["transitions_by_window"]
        axes[0].plot(windows, [100 * a for a in acc], marker="o", label=_label(result))
        axes[1].plot(windows, [tr[w]["precision"] for w in windows], marker="o")
        axes[2].plot(windows, [tr[w]["recall"] for w in windows], marker="o")
    for ax, title in zip(axes, ("accuracy (%)", "transition precision", "transition recall")):
        ax.set_title(title)
        ax.set_xlabel("window (frames)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy_by_window.png", dpi=110)
    plt.close(fig)
    names.append("accuracy_by_window.png")

    classes = sorted({c for r in models for w in r["class_accuracy_by_window"].values()
                      for c in w})
    windows = [w for w in (0, 25) if all(w in r["class_accuracy_by_window"] for r in models)]
    if windows:
        fig, axes = plt.subplots(len(windows), 1, figsize=(max(8, len(classes) * 0.9), 3.2
                                                             * len(windows)), squeeze=False)
        width = 0.8 / max(len(models), 1)
        x = np.arange(len(classes))
        for ax, w in zip(axes[:, 0], windows):
            for m, result in enumerate(models):
                acc = result["class_accuracy_by_window"][w]
                vals = [100 * acc[c] if acc.get(c) is not None else 0.0 for c in classes]
                ax.bar(x + (m - (len(models) - 1) / 2) * width, vals, width,
                       label=_label(result))
            ax.set_xticks(x, classes)
            ax.set_ylim(0, 100)
            ax.set_ylabel("accuracy (%%), window %d" % w)
            ax.grid(axis="y", alpha=0.3)
        axes[0, 0].legend(fontsize=8, ncol=min(3, len(models)))
        fig.tight_layout()
        fig.savefig(out / "per_activity.png", dpi=110)
        plt.close(fig)
        names.append("per_activity.png")

    for m, result in enumerate(models):
        cm = np.asarray(result["confusion"], dtype=float)
        labels = result["classes"]
        fig, ax = plt.subplots(figsize=(1.2 + 0.55 * len(labels), 1.0 + 0.5 * len(labels)))
        rows = cm / np.maximum(cm.sum(1, keepdims=True), 1)
        ax.imshow(rows, cmap="Blues", vmin=0, vmax=1)
        for i in range(len(labels)):
            for j in range(len(labels)):
                if cm[i, j]:
                    ax.text(j, i, "%d" % cm[i, j], ha="center", va="center", fontsize=7,
                            color="white" if rows[i, j] > 0.5 else "black")
        ax.set_xticks(range(len(labels)), labels, rotation=45)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title("%s, window %d" % (_label(result), result["confusion_window"]), fontsize=9)
        fig.tight_layout()
        name = "confusion_%d.png" % m
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        names.append(name)
    return names


def _table(models: list[dict]) -> str:
    rows = []
    for r in models:
        acc = r["accuracy_by_window"]
        tr = r["transitions_by_window"]
        cells = [html.escape(_label(r))]
        for w in (0, 25, 50):
            cells.append("%.1f" % (100 * acc[w]) if w in acc else "-")
        cells.append("%.2f / %.2f" % (tr[25]["precision"], tr[25]["recall"])
                     if 25 in tr else "-")
        rows.append("<tr>" + "".join("<td>%s</td>" % c for c in cells) + "</tr>")
    return ("<table><tr><th>model</th><th>accuracy w0 (%)</th><th>w25</th><th>w50</th>"
            "<th>transition P / R (w25)</th></tr>" + "".join(rows) + "</table>")


def check_report_folder(directory, overwrite: bool = False) -> pathlib.Path:
    """``directory`` as a Path if a report can be written there, else UserError.

    Makes its parent folders; an existing empty folder counts as new (removed, so
    the report takes its place whole).
    """
    final = pathlib.Path(directory)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError("cannot create folder %s: %s" % (final.parent, exc.strerror or exc)) \
            from None
    with contextlib.suppress(OSError):
        if final.is_dir() and not any(final.iterdir()):
            final.rmdir()
    return check_free(final, overwrite)


def write_report(directory, summary: dict, *, overwrite: bool = False) -> pathlib.Path:
    """Write the report as the folder ``directory``; returns the path of its index.html.

    The folder must be new (or empty): the report is built under a temporary name and
    published whole (`host.outputs.exclusive_output`), so of two commands writing one
    report folder exactly one succeeds. ``overwrite`` replaces an existing folder.
    """
    final = check_report_folder(directory, overwrite)
    try:
        with exclusive_output(final, overwrite=overwrite) as out:
            out.mkdir()
            _write_report_files(out, summary)
    except UserError:
        raise
    except OSError as exc:
        raise UserError("cannot write report %s: %s" % (final, exc.strerror or exc)) \
            from None
    return final / "index.html"


def _write_report_files(out: pathlib.Path, summary: dict) -> None:
    # JSON keys are strings; plots and tables index windows by int.
    models = [dict(r, accuracy_by_window={int(k): v for k, v in r["accuracy_by_window"].items()},
                   transitions_by_window={int(k): v for k, v
                                          in r["transitions_by_window"].items()},
                   class_accuracy_by_window={int(k): v for k, v
                                             in r["class_accuracy_by_window"].items()})
              for r in summary["models"]]
    (out / "metrics.json").write_text(json.dumps(json_safe(summary), indent=1,
                                                 sort_keys=True, allow_nan=False))
    images = _plots(out, models)
    files = summary.get("files", [])
    body = [
        "<h1>WalkerLab evaluation</h1>",
        "<p>Leave-one-subject-out over %d recordings (%d subjects). Reproduce with:</p>"
        % (len(files), len(models[0]["per_subject"]) if models else 0),
        "<pre>%s</pre>" % html.escape(summary.get("command", "")),
        _table(models),
    ]
    body += ['<p><img src="%s" alt="%s"></p>' % (name, name) for name in images]
    body.append("<h2>Per subject (accuracy at window 25)</h2><table><tr><th>subject</th>"
                + "".join("<th>%s</th>" % html.escape(_label(r)) for r in models) + "</tr>")
    subjects = sorted({s for r in models for s in r["per_subject"]})
    for s in subjects:
        cells = []
        for r in models:
            acc = r["per_subject"].get(s, {}).get("accuracy_by_window", {})
            v = acc.get(25, acc.get("25"))
            cells.append("%.1f" % (100 * v) if v is not None else "-")
        body.append("<tr><td>%s</td>%s</tr>" % (html.escape(s), "".join(
            "<td>%s</td>" % c for c in cells)))
    body.append("</table><h2>Recordings</h2><ul>%s</ul>" % "".join(
        "<li>%s</li>" % html.escape(os.fspath(f)) for f in files))
    body.append('<p><a href="metrics.json">metrics.json</a> holds every number above.</p>')
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px}"
             "img{max-width:100%}")
    (out / "index.html").write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>WalkerLab evaluation"
        "</title><style>%s</style></head><body>%s</body></html>" % (style, "\n".join(body)))
