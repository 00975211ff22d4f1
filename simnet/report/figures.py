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
    """Lay out, write at ``dpi``, and free the figure. Every text is plain but a log axis's
    numbers (``10²``): a ``$`` in a scenario, job or link name is a dollar sign, never the
    start of a formula; a letter of a
    name no font has is drawn as a box, and a figure too crowded to lay out tightly (a legend
    of dozens of series) keeps its default margins, both without matplotlib's warning on the
    terminal."""
    import warnings

    from matplotlib.text import Text
    from matplotlib.ticker import LogFormatterMathtext

    numbers = set()  # tick labels a log axis writes as formulas (10^2, 4x10^2): numbers, never a name
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for ticks, formatter in ((axis.get_major_ticks(), axis.get_major_formatter()),
                                     (axis.get_minor_ticks(), axis.get_minor_formatter())):
                if isinstance(formatter, LogFormatterMathtext):
                    numbers.update(id(label) for tick in ticks for label in (tick.label1, tick.label2))
    for text in fig.findobj(Text):
        if id(text) not in numbers:
            text.set_parse_math(False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout()
        fig.set_layout_engine(None)  # laid out: else savefig draws it once more, to lay out nothing
        fig.savefig(path, dpi=dpi)
    plt.close(fig)
