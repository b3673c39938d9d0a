"""Secrets out of what kvbench prints or stores: a database password (in a URL's authority, a query
parameter, a libpq `key=value` string) anywhere in a text a user typed — an error echoing the value,
a tag stored with the run. A leaf module (no SQLAlchemy), so every entry point can use it."""

from __future__ import annotations

import re
from urllib.parse import unquote

_SECRET_KEYS = {"password", "passwd", "pwd", "sslpassword"}


# `user:password@` after a scheme with any number of slashes (a path normalisation turns `://` into
# `:/`) or at the start of a word (`kv:pw@host`). The password runs to the word's last '@' (it may hold
# '@' or '/') but never past a space or a quote, so the text around the URL is kept as it was. A bare
# word's password does not start with '/': that is `scheme://user@host`, which has none.
_AUTHORITY = re.compile(r"""(?:(?P<scheme>[A-Za-z][\w+.-]*:/*)|(?<![^\s'"=(,\[{<]))"""
                        r"""(?P<user>[^\s:/@?#'"]*):(?(scheme)|(?!/))[^\s'"]*@""")


def redact(url: str) -> str:
    """The text with any password replaced by *** — in a URL's authority (even an empty user, a password
    holding '@' or '%', a scheme left with one slash or none), in a bare `user:password@host`, in a
    query parameter (its name percent-encoded too), and in a libpq `key=value` string; the rest of the
    text is kept."""
    text = _AUTHORITY.sub(lambda m: f"{m.group('scheme') or ''}{m.group('user')}:***@", str(url))

    def hide(match: re.Match) -> str:
        lead, key = match.group(1), match.group(2)
        return f"{lead}{key}=***" if unquote(key).strip().lower() in _SECRET_KEYS else match.group(0)

    return re.sub(r"(^|[?&;\s])([^=&?;\s]+)\s*=\s*('[^']*'|[^&;\s]*)", hide, text)
