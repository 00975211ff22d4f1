"""What every simnet figure shares: a headless matplotlib, time axes in human units, and
series styles that stay distinguishable when curves lie on top of each other."""

from __future__ import annotations

from itertools import cycle

from simnet import units

__all__ = ["pyplot", "time_axis", "series_styles", "save"]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_LINES = ("-", "--", "-.", ":")


def pyplot():
    """matplotlib.pyplot, on the Agg backend (no screen needed) unless the caller's session
    (a notebook, a script) already chose one: simnet never switches a live backend."""
    import sys

    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def time_axis(axis) -> None:
    """Label a (log or linear) axis in seconds with human units: '150 ms', not '1.5x10^-1'."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: units.format_time(value, short=True) if value > 0 else "0"))
    axis.set_minor_formatter(NullFormatter())


def series_styles(names: list[str]) -> dict[str, dict]:
    """A distinct (colour, marker, line style, size) per series; markers shrink with each
    series so that coinciding curves still show every marker."""
    import matplotlib

    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = {}
    for i, (name, colour, marker) in enumerate(zip(names, cycle(colours), cycle(_MARKERS))):
        styles[name] = {"color": colour, "marker": marker, "linestyle": _LINES[i % len(_LINES)],
                        "markersize": max(4.0, 10.0 - 1.2 * i), "markerfacecolor": "none" if i % 2 else colour}
    return styles


def save(plt, fig, path, dpi: int = 120) -> None:
    """Lay out, write at ``dpi``, and free the figure. Every text is plain: a ``$`` in a
    scenario, job or link name is a dollar sign, never the start of a formula; a letter of a
    name no font has is drawn as a box, and a figure too crowded to lay out tightly (a legend
    of dozens of series) keeps its default margins, both without matplotlib's warning on the
    terminal."""
    import warnings

    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_parse_math(False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
