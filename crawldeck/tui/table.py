"""``LineTable``: a virtual table that draws only the rows on screen, each row once.

Textual's ``DataTable`` renders every cell through Rich (padding, wrapping) and drops
its whole cache when one cell changes, so a table refreshed four times a second cost
the crawl more than the 10 % the console may take. ``LineTable`` keeps, per row, the
cells it was given and the ``Strip`` made from them: a refresh re-renders only the
rows whose cells changed (one ``Text`` per row), and drawing a line is a crop of a
cached strip (Textual's Line API). The header stays on the first line while the rows
scroll under it, and the first ``fixed`` columns stay on the left while the others
scroll sideways under ← and →, a column at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = Text | str


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its key, header label, width in cells, and ``right`` alignment."""

    key: str
    label: str
    width: int
    right: bool = False


class LineTable(ScrollView, can_focus=True):
    """A table of ``(key, cells)`` rows with a row cursor (see the module docstring).

    Enter (or a click on the cursor row) posts ``RowSelected``; a click on the header
    posts ``HeaderSelected``. ``set_rows`` keeps the cursor on the row it was on.
    ``fixed``: how many columns, from the left, stay in view when the table scrolls
    sideways.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Detail"),
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("left", "column(-1)", "Columns to the left", show=False),
        Binding("right", "column(1)", "Columns past the right edge", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move(-1000000000)", "First row", show=False),
        Binding("end", "move(1000000000)", "Last row", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "line-table--header",
        "line-table--cursor",
        "line-table--odd",
    }
    DEFAULT_CSS = """
    LineTable { height: 1fr; background: $surface; }
    LineTable > .line-table--header { text-style: bold; background: $panel; }
    LineTable > .line-table--odd { background: $surface-lighten-1; }
    LineTable > .line-table--cursor { background: $primary 40%; text-style: bold; }
    LineTable:focus > .line-table--cursor { background: $primary; }
    """

    cursor_row: reactive[int] = reactive(0)

    class RowSelected(Message):
        """Enter on a row: ``key`` is the row's key."""

        def __init__(self, table: LineTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

    class HeaderSelected(Message):
        """A click on a column's header: ``column`` is its key."""

        def __init__(self, table: LineTable, column: str) -> None:
            super().__init__()
            self.table = table
            self.column = column

    def __init__(self, columns: Sequence[Column], *, fixed: int = 0, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.fixed = fixed
        self.row_keys: list[str] = []
        self._cells: list[Sequence[Cell]] = []
        self._strips: dict[int, Strip] = {}  # row index -> its strip (no cursor/odd style)
        self._header: Strip | None = None
        self._styles: dict[str, Style] = {}  # computed once per style change, not per line
        self._width = sum(c.width + 2 for c in self.columns)

    @property
    def row_count(self) -> int:
        """How many rows the table holds."""
        return len(self.row_keys)

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (``None``: no rows)."""
        return self.row_keys[self.cursor_row] if self.row_keys else None

    def set_label(self, key: str, label: str) -> None:
        """Change the header label of column ``key``."""
        self.columns = [Column(c.key, label, c.width, c.right) if c.key == key else c
                        for c in self.columns]  # fmt: skip
        self._header = None
        self.refresh()

    def set_width(self, key: str, width: int) -> None:
        """Make column ``key`` ``width`` cells wide (every row is drawn again)."""
        if all(c.width == width for c in self.columns if c.key == key):
            return
        self.columns = [Column(c.key, c.label, width, c.right) if c.key == key else c
                        for c in self.columns]  # fmt: skip
        self._width = sum(c.width + 2 for c in self.columns)
        self.virtual_size = Size(self._width, len(self.row_keys) + 1)
        self._header = None
        self._strips.clear()
        self.refresh()

    def set_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Show ``rows``; only rows whose cells changed are rendered again."""
        keys = [key for key, _ in rows]
        selected = self.cursor_key
        changed = keys != self.row_keys
        for i, (_, cells) in enumerate(rows):
            if i >= len(self._cells) or self._cells[i] != cells:
                self._strips.pop(i, None)
                changed = True
        if not changed:
            return
        for i in range(len(rows), len(self._cells)):
            self._strips.pop(i, None)
        self.row_keys = keys
        self._cells = [cells for _, cells in rows]
        self.virtual_size = Size(self._width, len(rows) + 1)
        if selected in keys:
            self.cursor_row = keys.index(selected)
        else:
            self.cursor_row = min(self.cursor_row, max(0, len(keys) - 1))
        self.refresh()

    def validate_cursor_row(self, row: int) -> int:
        """Keep the cursor on a row."""
        return max(0, min(row, len(self.row_keys) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        """Redraw and keep the cursor row in view."""
        top = round(self.scroll_y)
        visible = max(1, self.size.height - 1)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False)
        self.refresh()

    def action_move(self, rows: int) -> None:
        """Move the cursor by ``rows``."""
        self.cursor_row += rows

    @property
    def fixed_width(self) -> int:
        """Cells of the columns that stay in view when the table scrolls sideways."""
        return sum(c.width + 2 for c in self.columns[: self.fixed])

    def action_column(self, columns: int) -> None:
        """Scroll sideways by ``columns`` of the scrolling columns (to a column's start)."""
        starts = [0]
        for column in self.columns[self.fixed : -1]:
            starts.append(starts[-1] + column.width + 2)
        at = round(self.scroll_x)
        first = max(i for i, start in enumerate(starts) if start <= at)
        if columns > 0 and at >= self.max_scroll_x:
            return  # the last column is in view
        target = starts[max(0, min(len(starts) - 1, first + columns))]
        self.scroll_to(x=min(target, self.max_scroll_x), animate=False)

    def action_page(self, pages: int) -> None:
        """Move the cursor by ``pages`` screens."""
        self.cursor_row += pages * max(1, self.size.height - 1)

    def action_select(self) -> None:
        """Post ``RowSelected`` for the cursor row."""
        if self.cursor_key is not None:
            self.post_message(self.RowSelected(self, self.cursor_key))

    def on_click(self, event: events.Click) -> None:
        """Header: ``HeaderSelected``; a row: move there (again: select it)."""
        if event.y == 0:
            fixed = self.fixed_width
            x = event.x if event.x < fixed else event.x + round(self.scroll_x)
            for column in self.columns:
                if x < column.width + 2:
                    self.post_message(self.HeaderSelected(self, column.key))
                    return
                x -= column.width + 2
            return
        row = round(self.scroll_y) + event.y - 1
        if 0 <= row < self.row_count:
            if row == self.cursor_row:
                self.action_select()
            self.cursor_row = row

    def notify_style_update(self) -> None:
        """The theme or a pseudo-class changed: render every row again."""
        super().notify_style_update()
        self._strips.clear()
        self._header = None
        self._styles.clear()

    def on_focus(self) -> None:
        """The cursor colour depends on the focus."""
        self._styles.clear()
        self.refresh()

    def on_blur(self) -> None:
        """The cursor colour depends on the focus."""
        self._styles.clear()
        self.refresh()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            base = self.rich_style
            style = base if name == "base" else base + self.get_component_rich_style(name)
            self._styles[name] = style
        return style

    def _line(self, cells: Sequence[Cell]) -> Strip:
        line = Text(no_wrap=True, end="")
        for column, cell in zip(self.columns, cells, strict=False):
            text = cell.copy() if isinstance(cell, Text) else Text(cell)
            text.truncate(column.width, overflow="ellipsis")
            pad = " " * (column.width - text.cell_len)
            line.append(" ")
            if column.right:
                line.append(pad)
                line.append_text(text)
            else:
                line.append_text(text)
                line.append(pad)
            line.append(" ")
        return Strip(list(line.render(self.app.console)), self._width)

    def _crop(self, strip: Strip, style: Style) -> Strip:
        """The part of a full-width line in view: the fixed columns, then the others
        from the scroll offset."""
        scroll_x = round(self.scroll_x)
        width = self.size.width
        fixed = self.fixed_width
        if fixed and scroll_x:
            moved = strip.crop(fixed + scroll_x, scroll_x + width)
            strip = Strip.join([strip.crop(0, fixed), moved])
            return strip.crop_extend(0, width, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the widget: the header, then the rows from the scroll offset."""
        width = self.size.width
        base = self._style("base")
        if y == 0:
            if self._header is None:
                header = self._line([c.label for c in self.columns])
                self._header = header.apply_style(self._style("line-table--header"))
            return self._crop(self._header, base)
        row = round(self.scroll_y) + y - 1
        if row >= len(self._cells):
            return Strip.blank(width, base)
        strip = self._strips.get(row)
        if strip is None:
            strip = self._strips[row] = self._line(self._cells[row])
        if row == self.cursor_row:
            style = self._style("line-table--cursor")
        else:
            style = self._style("line-table--odd") if row % 2 else base
        return self._crop(strip.apply_style(style), style)
