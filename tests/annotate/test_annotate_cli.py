"""The annotator's commands end to end: simulate --sync-taps, render-video, annotate."""
from host.cli import main


def test_simulate_render_and_screenshot(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["simulate", "--course", "free", "--duration", "30", "--seed", "5",
                 "--sync-taps", "--out", str(out), "--quiet"]) == 0
    rec = str(out / "free_subject005.h5")
    video = str(tmp_path / "v.mp4")
    assert main(["render-video", rec, "--out", video, "--offset", "-1", "--drift", "200",
                 "--quiet"]) == 0
    assert "1.000200000 * t_video -1.000000 s" in capsys.readouterr().out
    assert main(["render-video", rec, "--out", video, "--quiet"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["render-video", rec, "--out", str(tmp_path / "w.mp4"), "--size", "big"]) == 2
    assert "--size takes WIDTHxHEIGHT" in capsys.readouterr().err
    shot = tmp_path / "a.png"
    assert main(["annotate", rec, "--video", video, "--at", "10", "--labels", "exp1",
                 "--screenshot", str(shot)]) == 0
    assert shot.stat().st_size > 10_000
    assert main(["annotate", rec, "--video", str(tmp_path / "none.mp4"),
                 "--screenshot", str(shot)]) == 2
    assert "no such video" in capsys.readouterr().err
    assert main(["annotate", rec, "--labels", "missing.json", "--screenshot",
                 str(shot)]) == 2
    assert "no such label-set file" in capsys.readouterr().err
