"""Analysis commands on unlabelled structure: topics, discovered regimes, the latent map.

Each command is a thin layer over a library call; `register` adds them to the
`walkerlab` parser.
"""
from __future__ import annotations

from host.errors import UserError


def _check_recordings(paths) -> None:
    """The user's recordings may be damaged: probe their structure first (one line
    naming a damaged one, exit 2), as train and evaluate do."""
    from host.recording import check_structures

    check_structures(paths)


def cmd_topics(args) -> int:
    from host import topics

    if args.action == "fit":
        if not args.out:
            raise UserError("topics fit needs --out MODEL.npz")
        _check_recordings(args.files)
        path, model = topics.fit_topics(args.files, args.out, n_topics=args.topics,
                                        n_words=args.words, doc_s=args.doc_seconds,
                                        method=args.method, overwrite=args.overwrite,
                                        progress=not args.quiet)
        print("%s: %d topics over %d documents of %d recording(s)%s"
              % (path, model.header["n_topics"], model.header["n_documents"],
                 len(args.files), " (chosen by the HDP, of up to %d)"
                 % topics.AUTO_TRUNCATION if model.header["method"] == "hdp" else ""))
    else:
        if len(args.files) != 1:
            raise UserError("topics show takes one model file")
        path = args.files[0]
        kind = _recognizer_kind(path)
        if kind == "shdp":  # walkerlab train --recognizer shdp
            from host.models import load_model

            print("\n".join(topics.describe_shdp(load_model(path))))
        elif kind is not None:
            raise UserError("%s is a %s recognizer, not a topic model: `topics show` reads "
                            "what `walkerlab topics fit` saves, or an shdp recognizer"
                            % (path, kind))
        else:
            print("\n".join(topics.describe(topics.TopicModel.load(path))))
    return 0


def _recognizer_kind(path) -> str | None:
    """The recognizer kind of a model file, or None for anything else (a topic model)."""
    from recognizers import ModelFormatError
    from recognizers.base import read_model_header

    try:
        return read_model_header(path).get("kind")
    except (ModelFormatError, OSError):
        return None


def cmd_discover(args) -> int:
    from host.discover import discover

    _check_recordings([args.file])
    res = discover(args.file, args.max_regimes, args.window, args.track, args.seed,
                   write=not args.dry_run, progress=not args.quiet, method=args.method)
    print("%s: %d regime(s) in %d segment(s)%s -> track %r" % (
        args.file, res.n_regimes, len(res.track), "" if res.error_vs_truth is None else
        ", %.1f %% error against the simulator's activities" % (100 * res.error_vs_truth),
        args.track) + (" (not saved: --dry-run)" if args.dry_run else ""))
    return 0


def cmd_latent(args) -> int:
    from host import latent

    _check_recordings(args.files)
    if args.action == "fit":
        if not args.out:
            raise UserError("latent fit needs --out MODEL.npz")
        path, model = latent.fit_latent(args.files, args.out, n_components=args.components,
                                        overwrite=args.overwrite, progress=not args.quiet)
        print("%s: %d windows of %d recording(s), %d components"
              % (path, model.header["n_windows"], len(args.files), args.components))
    else:
        sessions = [latent.session_windows(p) for p in args.files]
        print("LOSO, %d sessions: accuracy over windows and over frames (mean +- std of folds)"
              % len(sessions))
        for name, acc in latent.evaluate_projection(
                sessions, args.components, progress=not args.quiet).items():
            print("%-16s windows %.3f (+- %.3f)  frames %.3f (+- %.3f)"
                  % (name, *acc["window"], *acc["frame"]))
    return 0


def register(sub) -> None:
    """Add the analysis commands to the subparsers ``sub``."""
    p = sub.add_parser("topics", help="topics of recordings: bags of motion words under LDA",
                       description="fit: quantise half-second windows into motion words "
                       "(k-means), cut recordings into documents and learn LDA topics "
                       "(Bayesian moment matching by default); show: each topic's motion "
                       "words in physical terms and its share in each labelled activity. "
                       "show also reads a `walkerlab train --recognizer shdp` model: the "
                       "motion-word topics each activity uses.")
    p.add_argument("action", choices=("fit", "show"), help="fit a model, or show one")
    p.add_argument("files", nargs="+", metavar="FILES",
                   help="recordings (.h5) for fit; the model (.npz) for show (a topic "
                   "model or an shdp recognizer)")
    p.add_argument("--out", default=None, help="model file to write (.npz), for fit")
    p.add_argument("--topics", default="5",
                   help="number of topics (LDA), or 'auto': an HDP chooses the number")
    p.add_argument("--words", type=int, default=40, help="motion-word vocabulary size")
    p.add_argument("--doc-seconds", type=float, default=10.0,
                   help="length of a document (s)")
    p.add_argument("--method", choices=("bmm", "gibbs", "vb"), default="bmm",
                   help="LDA learner (not used with --topics auto)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_topics)

    p = sub.add_parser("discover", help="find the regimes of a long unlabelled recording",
                       description="Fit a stick-breaking HMM (it chooses the number of "
                       "regimes) to window features and save the regimes as a label track "
                       "for the annotator to name and correct.")
    p.add_argument("file", help="recording (.h5)")
    p.add_argument("--max-regimes", type=int, default=10, metavar="C",
                   help="most regimes the model may use (truncation of the stick-breaking prior)")
    p.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                   help="features are averaged over windows of this length")
    p.add_argument("--track", default="discovered", help="label track to write")
    p.add_argument("--seed", type=int, default=0, help="random seed of the fit")
    p.add_argument("--method", choices=("sbhmm", "lm2gp"), default="sbhmm",
                   help="stick-breaking HMM on the features, or LM2GP (latent manifold)")
    p.add_argument("--dry-run", action="store_true", help="do not write the track")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_discover)

    p = sub.add_parser("latent", help="latent map of walker windows (Bayesian harmonium)",
                       description="fit: learn a dual-wing Bayesian harmonium over per-window "
                       "events and statistics and save it (.npz + JSON); evaluate: "
                       "leave-one-subject-out accuracy of 1-NN and logistic regression on "
                       "the projection and on the raw window features.")
    p.add_argument("action", choices=("fit", "evaluate"), help="fit a model, or evaluate "
                   "the projection by leave-one-subject-out")
    p.add_argument("files", nargs="+", metavar="RECORDINGS", help="recordings (.h5)")
    p.add_argument("--out", default=None, help="model file to write (.npz), for fit")
    p.add_argument("--components", type=int, default=4, help="hidden units (map dimensions)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_latent)
