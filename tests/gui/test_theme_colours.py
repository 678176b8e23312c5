"""Model-state colours (topics, regimes) can never be mistaken for activity colours."""
import itertools

import numpy as np

from host.gui.theme import ACTIVITY_COLORS, STATE_COLORS, _EXTRA, class_color, state_color


def _lab(hex_colour: str) -> np.ndarray:
    """CIELAB (D65) of an sRGB hex colour, from the CIE definitions."""
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    lin = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ lin / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_state_colours_are_far_from_every_activity_colour_and_each_other():
    activity = list(ACTIVITY_COLORS.values()) + list(_EXTRA)
    # every colour an activity code can get, unknown codes included
    activity += [class_color(code) for code in ("X", "FOO", "R1", "topic 0")]
    for s in STATE_COLORS:
        assert min(np.linalg.norm(_lab(s) - _lab(a)) for a in activity) > 33, s
    for a, b in itertools.combinations(STATE_COLORS, 2):
        assert np.linalg.norm(_lab(a) - _lab(b)) > 33, (a, b)
    # lightness that reads on white and on the dark theme's grey
    assert all(35 <= _lab(s)[0] <= 72 for s in STATE_COLORS)


def test_state_color_cycles_through_the_palette():
    n = len(STATE_COLORS)
    assert [state_color(i) for i in range(n)] == list(STATE_COLORS)
    assert state_color(n + 2) == STATE_COLORS[2]
