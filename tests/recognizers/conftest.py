"""Synthetic labelled walker-like sessions for the recognizer tests."""
import numpy as np
import pytest

ACTIVITIES = np.array(["NTW", "ST", "WF", "TL", "TR"])


def synthetic_sessions(n_subjects=3, sessions_per_subject=1, n_features=7, seed=0,
                       segment=(20, 60), n_segments=8, noise=0.6):
    """Sessions with piecewise-constant activities and activity-specific feature means."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=2.0, size=(ACTIVITIES.size, n_features))
    sessions = []
    for subj in range(n_subjects):
        offset = rng.normal(scale=0.2, size=n_features)  # subject-specific bias
        for _ in range(sessions_per_subject):
            acts = rng.integers(0, ACTIVITIES.size, n_segments)
            lens = rng.integers(segment[0], segment[1], n_segments)
            y = np.repeat(acts, lens)
            X = means[y] + offset + rng.normal(scale=noise, size=(y.size, n_features))
            sessions.append({"subject": "S%d" % subj, "X": X, "y": ACTIVITIES[y]})
    return sessions


@pytest.fixture
def sessions():
    return synthetic_sessions()


@pytest.fixture
def make_sessions():
    return synthetic_sessions
