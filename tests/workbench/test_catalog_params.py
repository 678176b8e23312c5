"""The workbench's non-widget logic: recording descriptions, filters, settings forms."""
import pytest

from host.errors import UserError
from host.evaluate import ModelSpec
from host.workbench import catalog
from host.workbench.params import format_value, param_fields, parse_value, validate_params
from recognizers import RECOGNIZERS, get_recognizer_class


def test_describe_recording_matches_the_full_reader(varied_paths):
    from host.recording import open_recording

    for p in varied_paths:
        info = catalog.describe_recording(p)
        rec = open_recording(p)
        summary = rec.summary()
        assert info.subject == summary["subject_id"]
        assert info.walker == summary["walker_id"]
        assert info.duration_s == pytest.approx(rec.time_s[-1] - rec.time_s[0])
        assert [t.name for t in info.tracks] == sorted(rec.labels)
        for t in info.tracks:
            assert set(t.classes) == set(rec.label_sample_counts(t.name))
    infos = [catalog.describe_recording(p) for p in varied_paths]
    assert [i.subject for i in infos] == ["S000", "S001", "S002"]
    assert [i.walker for i in infos] == ["SIM-0", "SIM-0", "W2"]
    assert infos[0].annotators == ("alice", "simulator")
    for i in infos:
        assert i.label_set == catalog.label_set_name(i.classes)


def test_filters_select_exactly_the_matching_recordings(varied_paths):
    infos = [catalog.describe_recording(p) for p in varied_paths]
    values = catalog.filter_values(infos)
    assert values == {"subject": ["S000", "S001", "S002"], "walker": ["SIM-0", "W2"],
                      "annotator": ["alice", "simulator"],
                      "label_set": sorted({i.label_set for i in infos})}
    # Every combination of filter values against a brute-force predicate.
    for subject in ["", *values["subject"]]:
        for walker in ["", *values["walker"]]:
            for annotator in ["", *values["annotator"]]:
                f = catalog.Filters(subject, walker, annotator)
                got = [i.subject for i in infos if f.accepts(i)]
                want = [i.subject for i in infos
                        if subject in ("", i.subject) and walker in ("", i.walker)
                        and (annotator == "" or annotator in i.annotators)]
                assert got == want
    assert catalog.track_for_annotator(infos, "alice") == "alice"
    assert catalog.track_for_annotator(infos, "") is None


def test_label_set_names():
    assert catalog.label_set_name(["ST", "WF"]) == "exp1/exp2"
    assert catalog.label_set_name(["ST", "TRS"]) == "exp1"
    assert catalog.label_set_name(["ST", "GUR"]) == "exp2"
    assert catalog.label_set_name(["ST", "JUMP"]) == "2 classes"
    assert catalog.label_set_name([]) == "unlabelled"


def test_folder_scan_and_bad_files(exp2_paths, tmp_path):
    import os

    folder = os.path.dirname(exp2_paths[0])
    assert catalog.recordings_in(folder) == sorted(exp2_paths)
    junk = tmp_path / "notes.h5"
    junk.write_text("not hdf5")
    with pytest.raises(UserError):
        catalog.describe_recording(junk)
    with pytest.raises(UserError, match="no such file"):
        catalog.describe_recording(tmp_path / "missing.h5")
    with pytest.raises(UserError, match="not a folder"):
        catalog.recordings_in(junk)


@pytest.mark.parametrize("kind", sorted(RECOGNIZERS))
def test_every_kind_has_a_form_whose_defaults_round_trip(kind):
    fields = param_fields(kind)
    defaults = get_recognizer_class(kind)().get_params(deep=False)
    assert {f.name for f in fields} == set(defaults) - {"verbose"}
    typed = {}
    for f in fields:
        assert f.default == defaults[f.name]
        if f.widget in ("int", "float", "text"):
            typed[f.name] = parse_value(f, format_value(f.default))
        else:
            typed[f.name] = f.default
        assert typed[f.name] == defaults[f.name]
        if f.widget == "choice":
            assert f.default in f.options
    ModelSpec(kind, typed).check()  # the form's values are valid constructor arguments
    validate_params(kind, typed)


def test_parse_value_rejects_bad_text_with_a_clear_message():
    fields = {f.name: f for f in param_fields("bmm")}
    assert parse_value(fields["n_states"], "") is None  # optional: auto
    assert parse_value(fields["n_states"], "7") == 7
    with pytest.raises(UserError, match="n_bins must be a whole number"):
        parse_value(fields["n_bins"], "2.5")
    with pytest.raises(UserError, match="n_bins needs a value"):
        parse_value(fields["n_bins"], " ")
    with pytest.raises(UserError, match="prior_asymmetry must be a number"):
        parse_value(fields["prior_asymmetry"], "half")
    with pytest.raises(UserError, match=r"prior_asymmetry must be .*\[0.0, 1.0\), not 1.5"):
        validate_params("bmm", {"prior_asymmetry": 1.5})  # out of range: the constraints
    with pytest.raises(UserError, match="thresholds must be"):
        validate_params("crf", {"thresholds": "mean"})
    validate_params("crf", {"thresholds": None, "raw": False})  # None allowed: no error
