"""Secrets out of what kvbench prints or stores: a database password (in a URL's authority, a query
parameter, a libpq `key=value` string) anywhere in a text a user typed — an error echoing the value,
a tag stored with the run. A leaf module (no SQLAlchemy), so every entry point can use it."""

from __future__ import annotations

import re
from urllib.parse import unquote

_SECRET_KEYS = {"password", "passwd", "pwd", "sslpassword"}


def redact(url: str) -> str:
    """The URL with any password replaced by *** — in the authority (even an empty user, a password
    holding '@' or '%'), in a query parameter (its name percent-encoded too), and in a libpq
    `key=value` string."""
    text = re.sub(r"://([^:/@?#]*):.*@(?=[^@]*$)", r"://\1:***@", str(url))

    def hide(match: re.Match) -> str:
        lead, key = match.group(1), match.group(2)
        return f"{lead}{key}=***" if unquote(key).strip().lower() in _SECRET_KEYS else match.group(0)

    return re.sub(r"(^|[?&;\s])([^=&?;\s]+)\s*=\s*('[^']*'|[^&;\s]*)", hide, text)
