"""What "a figure fits" means in the tests: every text matplotlib draws lies inside the canvas, no two
titles lie on top of each other, and drawing gives no layout warning."""

from __future__ import annotations

import warnings
from unittest import mock

from matplotlib.figure import Figure
from matplotlib.text import Text

SLACK_PX = 1.0  # antialiasing may put a glyph's edge one pixel out; a clipped word is many


def _drawn_texts(fig: Figure) -> tuple[list[tuple[Text, object]], list[str]]:
    """Every text the draw really drew (tick labels outside the view are made but never drawn), with its
    extent; and the layout warnings the draw gave."""
    drawn = []
    original = Text.draw

    def draw(self, renderer):
        original(self, renderer)
        clipped = self.get_clip_on() and self.get_clip_box() is not None  # cut to its axes: shown inside them
        if self.get_visible() and self.get_text().strip() and not clipped:
            drawn.append((self, self.get_window_extent(renderer)))

    with warnings.catch_warnings(record=True) as caught, mock.patch.object(Text, "draw", draw):
        warnings.simplefilter("always")
        fig.canvas.draw()
    return drawn, [str(w.message) for w in caught if "layout" in str(w.message).lower()]


def _titles(fig: Figure) -> list[Text]:
    titles = [fig._suptitle] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        titles += [t for t in (ax.title, ax._left_title, ax._right_title) if t.get_text().strip()]
    return titles


def misfits(fig: Figure, dpi: float = 110) -> list[str]:
    """What does not fit in `fig` drawn at `dpi` (kvbench writes 110 and 150): a text, or part of one,
    outside the canvas, two titles that overlap, or a layout warning; empty when it fits."""
    fig.set_dpi(dpi)
    drawn, found = _drawn_texts(fig)
    found = [f"warning: {w}" for w in found]
    width, height = fig.bbox.width, fig.bbox.height
    for text, box in drawn:
        if box.x0 < -SLACK_PX or box.y0 < -SLACK_PX or box.x1 > width + SLACK_PX or box.y1 > height + SLACK_PX:
            found.append(f"outside the canvas ({width:.0f}×{height:.0f} px): {text.get_text()[:60]!r} at "
                         f"x {box.x0:.0f}–{box.x1:.0f}, y {box.y0:.0f}–{box.y1:.0f}")
    renderer = fig.canvas.get_renderer()
    boxes = [(t, t.get_window_extent(renderer)) for t in _titles(fig)]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if box_a.overlaps(box_b):
                found.append(f"titles overlap: {a.get_text()[:40]!r} and {b.get_text()[:40]!r}")
    return found
