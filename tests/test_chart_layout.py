"""The workday windows chart, drawn from the committed ledger, has no text on top of text
(issue 13 item 6): title, value labels and legend each keep their own space."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox

from staffstore.replays.charts import _windows
from staffstore.replays.report import read_ledgers

LEDGERS = Path(__file__).parents[1] / "ledgers"


def test_workday_windows_title_labels_and_legend_do_not_overlap() -> None:
    figure = _windows(read_ledgers(LEDGERS).replays["workday"])
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    (axes,) = figure.axes
    labels = [text.get_window_extent(renderer) for text in axes.texts]
    title = axes.title.get_window_extent(renderer)
    legend = figure.legends[0] if figure.legends else axes.get_legend()
    legend_box = legend.get_window_extent(renderer)
    plot = axes.get_window_extent(renderer)
    assert labels, "the bars carry value labels"
    for label in labels:
        assert not label.overlaps(title)
        assert not label.overlaps(legend_box)
        # Inside the axes: a label clipped at the top was drawn over the title before.
        assert Bbox.intersection(label, plot) is not None and label.y1 <= plot.y1
    assert not legend_box.overlaps(title)
    bars = [patch.get_window_extent(renderer) for patch in axes.patches]
    assert not any(legend_box.overlaps(bar) for bar in bars)
