"""Text from a run (benchmark ids, parameters, reasons, host names: an imported export may hold
anything) made inert in Markdown, so it shows as written and never breaks a table or adds a link."""

from __future__ import annotations

import re

# Markdown's punctuation that can start emphasis, code, a link, HTML or a table cell.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def md_text(value: object) -> str:
    """`value` as literal Markdown text on one line: specials backslash-escaped, line breaks as spaces."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(value).splitlines()))
