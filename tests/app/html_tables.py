"""Read back the HTML tables the page shows (telemetry, comparison, segments) as rows of cell texts."""

from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self.attributes: list[dict] = []  # of each <tr>
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
            self.attributes.append(dict(attrs))
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    """Every row, header first, as cell texts with whitespace collapsed."""
    parser = _Tables()
    parser.feed(html)
    return parser.rows


def row_attributes(html: str) -> list[dict]:
    parser = _Tables()
    parser.feed(html)
    return parser.attributes
