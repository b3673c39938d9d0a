"""Terminal tables that fit the reader's width (COLUMNS, piped or not) without cutting what matters.

Each column has a kind:

* `id` and `number`: never wrapped nor cut (a benchmark id, a host, a rate, a run id): the column is
  at least as wide as its longest value, and only its header may wrap (at its spaces).
* `text`: folds into whatever width the others leave (parameters, descriptions).
* `note`: a short note stays in its cell; a long one, or one repeated down the column, becomes a
  numbered footnote below the table, its mark `(n)` in the cell, so a row keeps to a few lines.

A cell may be `(shown, note)`: in a `note` column the note follows `shown` (a status word) or becomes
its mark; in an `id` or `number` column it is always a footnote (a peak's source beside the peak).
Where even that is too wide for the terminal, the columns a table names as `optional` are left out,
last first, and the caption says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

NOTE_INLINE_MAX = 24  # characters: a longer note is a footnote
TEXT_MAX = 24  # characters of one word a folding column keeps whole (half that on a narrower terminal)
NOTE_MIN = 8  # and a column of notes, mostly footnote marks
Cell = str | tuple[str, str]


class Footnotes:
    """Numbered notes under one table: the same text keeps its number wherever it appears."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def mark(self, text: str) -> str:
        """`(n)`, the footnote that holds `text`."""
        return f"({self.numbers.setdefault(text, len(self.numbers) + 1)})"

    def lines(self) -> list[str]:
        """The footnotes, `(n) text` each."""
        return [f"({n}) {text}" for text, n in self.numbers.items()]


def _width(markup: str) -> int:
    return Text.from_markup(markup).cell_len


def fold_notes(rows: Sequence[Sequence[Cell]], kinds: Sequence[str], notes: Footnotes,
               inline_max: int = NOTE_INLINE_MAX) -> list[list[str]]:
    """`rows` with every note that is long, repeated in its column, or beside a never-wrapped value
    replaced by its footnote's mark; read row by row, so the numbers run down the table."""
    seen: list[dict[str, int]] = [{} for _ in kinds]
    for row in rows:
        for i, cell in enumerate(row):
            text = cell[1] if isinstance(cell, tuple) else cell
            if kinds[i] == "note" and text:
                seen[i][text] = seen[i].get(text, 0) + 1
    out = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            shown, note = cell if isinstance(cell, tuple) else ("", cell)
            if kinds[i] != "note" and not isinstance(cell, tuple):
                shown, note = cell, ""
            elif note and (kinds[i] != "note" or _width(note) > inline_max or seen[i][note] > 1):
                note = notes.mark(Text.from_markup(note).plain)
            cells.append(f"{shown} {note}" if shown and note else shown or note)
        out.append(cells)
    return out


class FittedTable:
    """A table laid out when it is printed, for the width it is printed at (a rich renderable)."""

    def __init__(self, title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Cell]],
                 optional: Sequence[str] = (), caption: str | None = None, **table: Any) -> None:
        self.title, self.columns, self.optional, self.caption, self.table = title, list(columns), optional, caption, table
        self.notes = Footnotes()
        self.cells = fold_notes(rows, [kind for _header, kind in columns], self.notes)

    def _least(self, i: int, squeeze: int = 1) -> int:
        """The narrowest column `i` may be: its longest value (never wrapped) or its longest word up to
        TEXT_MAX (folding; `squeeze` times narrower where the terminal is narrower still)."""
        header, kind = self.columns[i]
        words = max((len(w) for w in header.split()), default=1)
        if kind in ("id", "number"):
            return max([words, *(_width(row[i]) for row in self.cells)])
        # a folding column is as wide as its longest word (up to a bound): a value such as
        # block_tokens=16 is broken at a space, never inside (block_tokens=1 / 6 reads as another value)
        tokens = [len(t) for row in self.cells for t in Text.from_markup(row[i]).plain.split()]
        # squeezed, a column of notes gives way first (to its marks), then the words of folding text
        cap = TEXT_MAX // max(squeeze // 2, 1) if kind == "text" else NOTE_MIN // min(squeeze, 2)
        return min(max([words, *tokens]), cap)

    def build(self, width: int) -> Table:
        """The rich table for `width` columns of terminal: optional columns left out until it fits."""
        keep = list(range(len(self.columns)))
        dropped = []
        for name in reversed(self.optional):
            if sum(self._least(i) + 3 for i in keep) + 1 <= width:
                break
            keep = [i for i in keep if self.columns[i][0] != name]
            dropped.insert(0, name)
        under = [*([self.caption] if self.caption else []), *self.notes.lines()]
        if dropped:
            under.append(f"left out for want of width: {', '.join(dropped)} (a wider terminal or COLUMNS shows them)")
        table = Table(title=self.title, title_justify="left", caption="\n".join(under) or None, caption_justify="left",
                      **self.table)
        for i, width_i in self._widths(keep, width).items():
            header, kind = self.columns[i]
            table.add_column(header, justify="right" if kind == "number" else "left", overflow="fold", width=width_i)
        for row in self.cells:
            table.add_row(*(row[i] for i in keep))
        return table

    def _widths(self, keep: list[int], width: int) -> dict[int, int | None]:
        """Each kept column's width: None (its natural width) where the table fits; else ids and numbers
        at their least, and the room left shared by the folding columns, each at least its least, the
        rest in proportion to what more each would take. All None (everything folds) where even the
        least do not fit, since rich cuts what overflows a line."""
        natural = {i: max([_width(self.columns[i][0]), *(_width(row[i]) for row in self.cells)]) for i in keep}
        if sum(natural.values()) + 3 * len(keep) + 1 <= width:
            return dict.fromkeys(keep)
        squeeze = next((n for n in (1, 2, 4, 8) if sum(self._least(i, n) + 3 for i in keep) + 1 <= width), None)
        if squeeze is None:
            return dict.fromkeys(keep)
        out = {i: self._least(i, squeeze) for i in keep}
        flexible = [i for i in keep if self.columns[i][1] not in ("id", "number")]
        room = width - 3 * len(keep) - 1 - sum(out.values())
        wants = {i: max(natural[i] - out[i], 0) for i in flexible}
        total = sum(wants.values())
        for i in flexible:
            out[i] += min(wants[i], room * wants[i] // total) if total else 0
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.build(options.max_width)
        # the notes under the table wrap at the terminal's width, not the table's: a narrow table would
        # break a footnote (a warning a reader or a grep looks for) at its own width
        under, table.caption = table.caption, None
        yield table
        if under:
            yield Text(under)
