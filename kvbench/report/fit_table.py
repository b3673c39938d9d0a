"""Terminal tables that fit the reader's width (COLUMNS, piped or not) without cutting what matters.

Each column has a kind:

* `id` and `number`: never wrapped nor cut (a benchmark id, a host, a rate, a run id): the column is
  at least as wide as its longest value, and only its header may wrap (at its spaces).
* `text`: folds into whatever width the others leave (parameters, descriptions), at spaces.
* `words`: folds at spaces only, never inside a word however narrow the terminal (a threshold, a
  measured value with its interval): the column is at least as wide as its longest word.
* `note`: a short note stays in its cell; a long one, or one repeated down the column, becomes a
  numbered footnote below the table, its mark `(n)` in the cell, so a row keeps to a few lines.

A cell may be `(shown, note)`: in a `note` column the note follows `shown` (a status word) or becomes
its mark; in an `id` or `number` column it is always a footnote (a peak's source beside the peak).
Where even that is too wide for the terminal, a column the table `stack`s under another (a case's
parameters under its rule) moves into that column's cell, below its value; then the columns a table
names as `optional` are left out, last first, and the caption says which.

A note that recurs with other details (`contended: other processes used 75 % …`, then 61 %, …) is one
footnote for all its rows: its label, the first row's details and the rows it applies to
("(3) contended: … — rows 1–12"), so twelve near-identical lines do not bury the table.
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


MERGE_FROM = 3  # rows sharing a note's label (with other details) before they share one footnote


class Footnotes:
    """Numbered notes under one table: the same text keeps its number wherever it appears, and a label
    several rows carry with varying details (`merge`) is one footnote naming its rows."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.rows: dict[str, list[int]] = {}  # a merged footnote's text → the table rows (1-based) it covers

    def mark(self, text: str, row: int | None = None) -> str:
        """`(n)`, the footnote that holds `text` (for table row `row`, where it is a merged one)."""
        if row is not None and text in self.rows and row not in self.rows[text]:
            self.rows[text].append(row)
        return f"({self.numbers.setdefault(text, len(self.numbers) + 1)})"

    def merged(self, text: str) -> None:
        """Mark `text` as a note shared by several rows, listed with them."""
        self.rows.setdefault(text, [])

    def lines(self) -> list[str]:
        """The footnotes, `(n) text` each; a merged one ends with the rows it covers."""
        return [f"({n}) {text}" + (f" — rows {_spans(self.rows[text])}" if self.rows.get(text) else "")
                for text, n in self.numbers.items()]


def _spans(rows: list[int]) -> str:
    """1, 2, 3, 5 → "1–3, 5"."""
    rows, out, i = sorted(set(rows)), [], 0
    while i < len(rows):
        j = i
        while j + 1 < len(rows) and rows[j + 1] == rows[j] + 1:
            j += 1
        out.append(str(rows[i]) if i == j else f"{rows[i]}–{rows[j]}")
        i = j + 1
    return ", ".join(out)


def _label(part: str) -> str | None:
    """The label of one note part ("contended" of "contended: other processes used …"), or None."""
    head, sep, _rest = part.partition(":")
    return head.strip() if sep and 0 < len(head.strip()) <= 24 and " " not in head.strip() else None


def _merged_notes(notes: list[str]) -> dict[str, str]:
    """For the parts (split at "; ") of a column's notes, the merged footnote text of each part whose label
    MERGE_FROM or more rows carry with differing details: "label: the first's details …"."""
    by_label: dict[str, list[str]] = {}
    rows: dict[str, int] = {}
    for note in notes:
        labels = set()
        for part in dict.fromkeys(note.split("; ")):
            if (label := _label(part)) is not None:
                by_label.setdefault(label, []).append(part)
                labels.add(label)
        for label in labels:
            rows[label] = rows.get(label, 0) + 1
    out = {}
    for label, parts in by_label.items():
        if rows[label] >= MERGE_FROM and len(set(parts)) > 1:
            first = parts[0].split(":", 1)[1].strip()
            text = f"{label}: {first} (details differ by row: kvbench results --json has each)"
            out.update(dict.fromkeys(parts, text))
    return out


def _width(markup: str) -> int:
    """Terminal cells of the widest line of `markup`."""
    return max((Text.from_markup(line).cell_len for line in markup.split("\n")), default=0)


def fold_notes(rows: Sequence[Sequence[Cell]], kinds: Sequence[str], notes: Footnotes,
               inline_max: int = NOTE_INLINE_MAX) -> list[list[str]]:
    """`rows` with every note that is long, repeated in its column, or beside a never-wrapped value
    replaced by its footnote's mark; read row by row, so the numbers run down the table. A note part
    that MERGE_FROM rows carry under one label with other details is one footnote for all of them."""
    seen: list[dict[str, int]] = [{} for _ in kinds]
    texts: list[list[str]] = [[] for _ in kinds]
    for row in rows:
        for i, cell in enumerate(row):
            text = cell[1] if isinstance(cell, tuple) else cell
            if kinds[i] == "note" and text:
                seen[i][text] = seen[i].get(text, 0) + 1
                texts[i].append(Text.from_markup(text).plain)
    merged = [_merged_notes(t) for t in texts]
    out = []
    for n, row in enumerate(rows, start=1):
        cells = []
        for i, cell in enumerate(row):
            shown, note = cell if isinstance(cell, tuple) else ("", cell)
            if kinds[i] != "note" and not isinstance(cell, tuple):
                shown, note = cell, ""
            elif note and merged[i] and any(p in merged[i] for p in Text.from_markup(note).plain.split("; ")):
                note = _marks(Text.from_markup(note).plain, merged[i], notes, n)
            elif note and (kinds[i] != "note" or _width(note) > inline_max or seen[i][note] > 1):
                note = notes.mark(Text.from_markup(note).plain)
            cells.append(f"{shown} {note}" if shown and note else shown or note)
        out.append(cells)
    return out


def _marks(note: str, merged: dict[str, str], notes: Footnotes, row: int) -> str:
    """The marks of one note whose parts are partly merged footnotes: one mark per merged label, and one
    for what remains of the note (itself a footnote, as a long note is)."""
    marks, rest = [], []
    for part in dict.fromkeys(note.split("; ")):
        if part in merged:
            notes.merged(merged[part])
            marks.append(notes.mark(merged[part], row))
        else:
            rest.append(part)
    if rest:
        marks.append(notes.mark("; ".join(rest)))
    return " ".join(dict.fromkeys(marks))


class FittedTable:
    """A table laid out when it is printed, for the width it is printed at (a rich renderable)."""

    def __init__(self, title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Cell]],
                 optional: Sequence[str] = (), caption: str | None = None, stack: dict[str, str] | None = None,
                 **table: Any) -> None:
        self.title, self.columns, self.optional, self.caption, self.table = title, list(columns), optional, caption, table
        self.stack = dict(stack or {})  # column → the column whose cells it moves under when the table is too wide
        self.notes = Footnotes()
        self.cells = fold_notes(rows, [kind for _header, kind in columns], self.notes)

    def _stacked(self) -> FittedTable:
        """This table with each `stack` column moved under its target's value (the target's header naming
        both); the same footnotes."""
        out = FittedTable.__new__(FittedTable)
        out.title, out.optional, out.caption, out.table, out.notes, out.stack = (
            self.title, self.optional, self.caption, self.table, self.notes, {})
        names = [header for header, _kind in self.columns]
        moved = {names.index(c): names.index(t) for c, t in self.stack.items() if c in names and t in names}
        keep = [i for i in range(len(names)) if i not in moved]
        under = {t: [c for c, tt in moved.items() if tt == t] for t in keep}
        out.columns = [(" / ".join([names[i], *(names[c] for c in under[i])]), "stacked" if under[i] else kind)
                       for i, (_h, kind) in enumerate(self.columns) if i in keep]
        out.cells = [["\n".join([row[i], *(row[c] for c in under[i] if row[c])]) for i in keep] for row in self.cells]
        return out

    def _least(self, i: int, squeeze: int = 1) -> int:
        """The narrowest column `i` may be: its longest value (never wrapped) or its longest word up to
        TEXT_MAX (folding; `squeeze` times narrower where the terminal is narrower still)."""
        header, kind = self.columns[i]
        words = max((len(w) for w in header.split()), default=1)
        if kind in ("id", "number"):
            return max([words, *(_width(row[i]) for row in self.cells)])
        if kind in ("words", "stacked"):  # never inside a word; a stacked cell's first line is an id, kept whole
            lines = [line for row in self.cells for line in row[i].split("\n")]
            firsts = [_width(row[i].split("\n")[0]) for row in self.cells] if kind == "stacked" else []
            return max([words, *firsts, *(len(t) for line in lines for t in Text.from_markup(line).plain.split())])
        if kind == "note":  # the status word before a note's mark is never cut ("unavailable (3)")
            shown = max((len(Text.from_markup(row[i]).plain.split(" ", 1)[0]) for row in self.cells), default=0)
            tokens = [len(t) for row in self.cells for t in Text.from_markup(row[i]).plain.split()]
            return max(shown, min(max([words, *tokens]), NOTE_MIN // min(squeeze, 2)))
        # a folding column is as wide as its longest word (up to a bound): a value such as
        # block_tokens=16 is broken at a space, never inside (block_tokens=1 / 6 reads as another value)
        tokens = [len(t) for row in self.cells for t in Text.from_markup(row[i]).plain.split()]
        # squeezed, a column of notes gives way first (to its marks), then the words of folding text
        return min(max([words, *tokens]), TEXT_MAX // max(squeeze // 2, 1))

    def _fits(self, width: int) -> bool:
        return sum(self._least(i) + 3 for i in range(len(self.columns))) + 1 <= width

    def build(self, width: int) -> Table:
        """The rich table for `width` columns of terminal: stacked columns moved under their targets, then
        optional columns left out, until it fits."""
        if self.stack and not self._fits(width):
            return self._stacked().build(width)
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
        room = width - 3 * len(keep) - 1 - sum(out.values())
        for i in keep:  # short values that only fold at spaces (a threshold) take their whole width first
            if self.columns[i][1] == "words" and natural[i] - out[i] <= room:
                room -= natural[i] - out[i]
                out[i] = natural[i]
        flexible = [i for i in keep if self.columns[i][1] not in ("id", "number")]
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
