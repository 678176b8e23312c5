"""Topics of walker recordings: bags of motion words under LDA or HDP (`walkerlab topics`).

A recording is cut into half-second sub-windows described by the latent map's ten
window features (host/latent.py: five events such as "handle loaded" and five
statistics such as mean wheel speed, in physical units). A k-means codebook over the
standardised sub-windows turns each into a *motion word*; a *document* is a run of
consecutive sub-windows (10 s by default), counted as a bag of words. LDA
(recognizers/modelling/topics/lda.py, BMM by default) finds a given number of topics:
recurring mixtures of motion words, which `topics show` describes in physical terms and,
where recordings are labelled, against the activities. With ``--topics auto`` an HDP
(recognizers/modelling/topics/hdp.py, truncated at ``AUTO_TRUNCATION`` topics) decides
the number: the topics that carry at least 1 % of the words are the model's topics.

Model file (.npz, never pickled): a JSON header (uint8), the codebook (centres, mean,
scale) and the LDA's arrays prefixed ``lda_``, or the HDP's learned arrays prefixed
``hdp_`` (its parameters in the header).
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
from tqdm import tqdm

from host.errors import UserError
from host.latent import EVENT_NAMES, FEATURE_NAMES, session_windows
from host.models import TOPIC_MODEL_KIND
from host.outputs import check_free, exclusive_output
from recognizers.motion_words import MotionCodebook, bag_of_words, fit_codebook

__all__ = ["TopicModel", "bag_of_words", "majority", "session_documents", "learn_topics",
           "fit_topics", "describe", "describe_word"]

SUBWINDOW_S = 0.5
DOC_S = 10.0
AUTO = "auto"  # `--topics auto`: the HDP decides the number of topics
AUTO_TRUNCATION = 20  # the most topics it may use (small vocabularies: no growth)
FORMAT_VERSION = 1
KIND = TOPIC_MODEL_KIND
UNITS = {"accel_rms": "m/s^2", "jerk": "m/s^3", "mean_load": "x the 95th-percentile load",
         "mean_speed": "m/s", "load_oscillation": "x the 95th-percentile load"}


def session_documents(path, doc_s: float = DOC_S):
    """(sub-window features (n, 10), sub-window labels, document index per sub-window)."""
    s = session_windows(path, window_s=SUBWINDOW_S)
    per_doc = max(1, int(round(doc_s / SUBWINDOW_S)))
    return s.X, s.labels, np.arange(len(s.X)) // per_doc


def majority(labels: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """Each document's most frequent labelled activity ("" if none is labelled)."""
    out = np.full(int(doc.max()) + 1 if len(doc) else 0, "", dtype=object)
    for d in range(len(out)):
        lab = labels[doc == d]
        lab = lab[lab != ""]
        if len(lab):
            vals, counts = np.unique(lab, return_counts=True)
            out[d] = vals[np.argmax(counts)]
    return out.astype(str)


def parse_topic_count(value) -> int | str:
    """``--topics``: a whole number >= 1, or "auto" (UserError otherwise)."""
    if isinstance(value, str) and value.strip().lower() == AUTO:
        return AUTO
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = 0
    if count < 1 or str(value).strip() not in (str(count), "+" + str(count)):
        raise UserError("--topics must be a whole number >= 1 or 'auto', not %r" % (value,))
    return count


class TopicModel:
    """A motion-word codebook (recognizers/motion_words.py) and the topic model over its
    documents: an LDA (``header["method"]`` bmm, gibbs or vb) or an HDP ("hdp"), of
    which ``header["topics"]`` are the model's topics (all of an LDA's; an HDP's used
    ones)."""

    def __init__(self, centres, mean, scale, lda, header):
        self.codebook = MotionCodebook(centres, mean, scale)
        self.lda = lda  # the topic model: LDA or HDP (both have transform, topic_word_)
        self.header = header

    centres = property(lambda self: self.codebook.centres)
    mean = property(lambda self: self.codebook.mean)
    scale = property(lambda self: self.codebook.scale)

    def words(self, F: np.ndarray) -> np.ndarray:
        """The motion word (nearest codebook centre) of each sub-window."""
        return self.codebook.words(F)

    @property
    def topics(self) -> np.ndarray:
        """Indices of the model's topics among the estimator's components."""
        return np.asarray(self.header.get("topics", range(self.header["n_topics"])),
                          dtype=np.int64)

    def proportions(self, counts: np.ndarray) -> np.ndarray:
        """(n_docs, n_topics) topic proportions of bags of words over the model's topics
        (an HDP's unused topics' small share is spread over the others)."""
        theta = self.lda.transform(counts)[:, self.topics]
        return theta / np.maximum(theta.sum(1, keepdims=True), 1e-300)

    def session_topics(self, path):
        """(document start times in s from the session start, topic proportions (n, T),
        document activities) of one recording."""
        F, labels, doc = session_documents(path, self.header["doc_s"])
        counts = bag_of_words(self.words(F), doc, len(self.centres))
        t = np.arange(len(counts)) * self.header["doc_s"]
        return t, self.proportions(counts), majority(labels, doc)

    def save(self, path, overwrite: bool = False) -> pathlib.Path:
        path = pathlib.Path(path)
        if self.header["method"] == "hdp":
            arrays = {"hdp_" + k: np.asarray(getattr(self.lda, k))
                      for k in self.lda._learned_attributes}
        else:
            arrays = {"lda_" + k: v for k, v in self.lda.to_arrays().items()}
        with exclusive_output(path, overwrite=overwrite) as tmp:
            np.savez(tmp, header=np.frombuffer(json.dumps(self.header).encode(),
                                               dtype=np.uint8),
                     centres=self.centres, mean=self.mean, scale=self.scale, **arrays)
        return path

    @classmethod
    def load(cls, path) -> "TopicModel":
        from recognizers.npz_files import NpzFormatError, load_npz

        try:
            z = load_npz(path)
            header = json.loads(bytes(z["header"]).decode())
            if not isinstance(header, dict) or header.get("kind") != KIND:
                raise UserError("%s is not a walker topic model (kind %r)"
                                % (path, header.get("kind") if isinstance(header, dict)
                                   else None))
            return cls(z["centres"], z["mean"], z["scale"], _estimator_of(header, z), header)
        except FileNotFoundError:
            raise UserError("%s: no such model file" % path) from None
        except (NpzFormatError, OSError, KeyError, ValueError, TypeError, RecursionError,
                UnicodeDecodeError) as exc:
            raise UserError("cannot read topic model %s: %s"
                            % (path, str(exc).splitlines()[0])) from None


def _estimator_of(header, arrays):
    """The LDA or HDP of a model file's arrays (KeyError/ValueError if they do not fit)."""
    from recognizers.modelling import HDP, LDA

    if header.get("method") != "hdp":
        return LDA.from_arrays({k[4:]: v for k, v in arrays.items() if k.startswith("lda_")})
    params = header["hdp_params"]
    if not isinstance(params, dict) or not set(params) <= set(HDP().get_params()):
        raise ValueError("unknown HDP parameters in the header")
    hdp = HDP(**params)
    hdp._validate_params()  # a hand-edited header: refused here, not at first use
    hdp.set_learned_state(arrays, "hdp_")
    topics = np.asarray(header["topics"])
    if (topics.ndim != 1 or topics.dtype.kind not in "iu"
            or hdp.components_.ndim != 2 or hdp.components_.shape[1] != header["n_words"]
            or hdp.components_.shape[0] < hdp.n_components or len(topics) < 1
            or topics.min() < 0 or topics.max() >= hdp.components_.shape[0]):
        raise ValueError("HDP arrays do not match the header")
    return hdp


def _fit_estimator(X, n_topics, method, progress, random_state):
    """(fitted LDA or HDP, indices of its topics, method name) for ``--topics``."""
    from recognizers.modelling import HDP, LDA

    if n_topics == AUTO:
        if progress:
            print("HDP over %d documents: the data choose up to %d topics"
                  % (len(X), AUTO_TRUNCATION), flush=True)
        hdp = HDP(AUTO_TRUNCATION, max_components=AUTO_TRUNCATION, verbose=int(progress),
                  random_state=random_state).fit(X)
        hdp.set_params(verbose=0)  # (the model file keeps the fit's settings, not the bar)
        share = hdp.topic_counts_ / hdp.topic_counts_.sum()
        return hdp, np.flatnonzero(share >= 0.01), "hdp"  # the rule of n_topics_used_
    lda = LDA(n_topics, method=method, n_passes=3 if method == "bmm" else 1,
              random_state=random_state, verbose=int(progress)).fit(X)
    return lda, np.arange(n_topics), method


def learn_topics(paths, *, n_topics: int | str = 5, n_words: int = 40, doc_s: float = DOC_S,
                 method: str = "bmm", progress: bool = True,
                 random_state: int = 0) -> TopicModel:
    """Learn a motion-word codebook and topics from the recordings ``paths``: LDA with
    ``n_topics`` topics, or an HDP that chooses their number for ``n_topics="auto"``
    (``method`` is then unused)."""
    if not paths:
        raise UserError("no recordings given")
    n_topics = parse_topic_count(n_topics)
    if n_words < 2 or doc_s < SUBWINDOW_S:
        raise UserError("--words must be >= 2 and --doc-seconds >= %g"
                        % SUBWINDOW_S)
    sessions = [session_documents(p, doc_s)
                for p in tqdm(paths, desc="motion words", unit="file", disable=not progress)]
    F = np.vstack([s[0] for s in sessions])
    if len(F) < n_words:
        raise UserError("the recordings hold %d half-second windows, fewer than --words %d"
                        % (len(F), n_words))
    book = fit_codebook(F, n_words, random_state=random_state, n_init=4)
    model = TopicModel(book.centres, book.mean, book.scale, None, {})
    docs, labels = [], []
    for feats, lab, doc in sessions:
        docs.append(bag_of_words(model.words(feats), doc, n_words))
        labels.append(majority(lab, doc))
    X, y = np.vstack(docs), np.concatenate(labels)
    model.lda, topics, method = _fit_estimator(X, n_topics, method, progress, random_state)
    model.header = {"n_topics": len(topics), "topics": topics.tolist()}
    theta = model.proportions(X)
    association = {a: theta[y == a].mean(0).round(4).tolist() for a in sorted(set(y) - {""})}
    model.header = {"kind": KIND, "format_version": FORMAT_VERSION, "subwindow_s": SUBWINDOW_S,
                    "doc_s": float(doc_s), "feature_names": list(FEATURE_NAMES),
                    "n_words": int(n_words), "n_topics": len(topics),
                    "topics": topics.tolist(), "method": method,
                    "n_documents": int(len(X)), "recordings": [str(p) for p in paths],
                    "association": association,
                    "documents_per_activity": {a: int((y == a).sum()) for a in association}}
    if method == "hdp":
        model.header["hdp_params"] = model.lda.get_params()
    return model


def fit_topics(paths, out, *, overwrite: bool = False, **options
               ) -> tuple[pathlib.Path, TopicModel]:
    """:func:`learn_topics` and save the model to ``out`` (.npz)."""
    out = pathlib.Path(out)
    if out.suffix != ".npz":
        raise UserError("the topic model file must end in .npz: %s" % out)
    check_free(out, overwrite)  # before the fit
    model = learn_topics(paths, **options)
    return model.save(out, overwrite=overwrite), model


def describe_word(model: TopicModel, w: int) -> str:
    """A motion word in physical terms: its events and its most distinctive statistics."""
    centre = model.centres[w] * model.scale + model.mean
    parts = [name.replace("_", " ") for i, name in enumerate(EVENT_NAMES) if centre[i] >= 0.5]
    z = model.centres[w][len(EVENT_NAMES):]
    order = np.argsort(-np.abs(z))[:2]
    for j in order:
        name = FEATURE_NAMES[len(EVENT_NAMES) + j]
        parts.append("%s %.2f %s (%s)" % (name.replace("_", " "), centre[len(EVENT_NAMES) + j],
                                          UNITS[name], "high" if z[j] > 0 else "low"))
    return ", ".join(parts) or "quiet"


def describe(model: TopicModel, top: int = 3) -> list[str]:
    """`walkerlab topics show`: each topic's words, and topics against activities."""
    h = model.header
    lines = ["%d topics over %d motion words (%g s windows, %g s documents, %d documents, %s)"
             % (h["n_topics"], h["n_words"], h["subwindow_s"], h["doc_s"], h["n_documents"],
                h["method"])]
    phi = model.lda.topic_word_[model.topics]
    for k in range(phi.shape[0]):
        lines.append("topic %d:" % k)
        for w in np.argsort(-phi[k])[:top]:
            lines.append("  %4.1f %%  word %2d: %s" % (100 * phi[k, w], w,
                                                         describe_word(model, int(w))))
    if h["association"]:
        lines.append("mean topic proportions per activity (documents):")
        lines.append("  %-12s %s" % ("", " ".join("%7s" % ("topic %d" % k)
                                                  for k in range(phi.shape[0]))))
        for a, row in h["association"].items():
            lines.append("  %-12s %s  (%d)" % (a, " ".join("%7.2f" % v for v in row),
                                                h["documents_per_activity"][a]))
    return lines


# --------------------------------------------------------------------------- shdp models


def describe_shdp_word(model, w: int, names) -> str:
    """A motion word of an ``shdp`` recognizer: its sub-windows' most distinctive means
    (in standard deviations of the training frames) and their most varying feature."""
    book = model.codebook_
    stats = book.centres[w] * book.scale + book.mean  # (2 d): means, then std devs
    d = len(stats) // 2
    means, stds = stats[:d], stats[d:]
    parts = ["%s %s (%+.1f sd)" % (names[j], "high" if means[j] > 0 else "low", means[j])
             for j in np.argsort(-np.abs(means))[:2] if abs(means[j]) >= 0.3]
    j = int(np.argmax(stds))
    if stds[j] >= 0.5:
        parts.append("%s varying (%.1f sd)" % (names[j], stds[j]))
    return ", ".join(parts) or "near the mean, steady"


def describe_shdp(model, top_topics: int = 3, top_words: int = 3,
                  min_share: float = 0.05) -> list[str]:
    """`walkerlab topics show` for an ``shdp`` recognizer file: which motion-word topics
    each activity's documents use, and what those topics' words are."""
    from host.features import FEATURE_SETS

    names = FEATURE_SETS.get(model.feature_set_ or "", None)
    if names is None or len(names) != model.n_features_in_:
        names = ["feature %d" % j for j in range(model.n_features_in_)]
    m, secs = model.model_, model.time_constants_s()
    span = ("%g s" % secs["subwindow"], "%g s" % secs["document"]) if secs else (
        "%d frames" % model.subwindow, "%d words" % model.window)
    lines = ["shdp: %d of %d topics used, %d motion words of %s, documents of %s"
             % (m.n_topics_used_, m.components_.shape[0], model.codebook_.n_words, *span),
             "topics per activity (mean share of a document's words; documents):"]
    shown = []
    for c, act in enumerate(model.classes_):
        if model.class_docs_[c] == 0:
            lines.append("  %-4s never the majority of a training document" % act)
            continue
        row = model.topic_usage_[c]
        top = [k for k in np.argsort(-row)[:top_topics] if row[k] >= min_share]
        shown += [k for k in top if k not in shown]
        lines.append("  %-4s %s  (%d)" % (act, ", ".join("topic %d %2.0f %%" % (k, 100 * row[k])
                                                          for k in top),
                                         model.class_docs_[c]))
    phi = m.topic_word_
    lines.append("topics (their most frequent words):")
    for k in sorted(shown):
        lines.append("  topic %d:" % k)
        for w in np.argsort(-phi[k])[:top_words]:
            lines.append("    %4.1f %%  word %2d: %s" % (100 * phi[k, w], w,
                                                         describe_shdp_word(model, int(w), names)))
    return lines
