"""Opening an SQLite file without writing to it (`kvbench` on a read-only mount, a migration's
look before it writes): apart from connect.py and migrate.py so that both import it from below."""

from __future__ import annotations

import os
from pathlib import Path


def read_only_uri(path: Path) -> str:
    """An sqlite3 URI that opens `path` without writing: `mode=ro`, and `immutable=1` where its folder
    cannot be written (a read-only mount, where WAL's shared-memory file cannot be made)."""
    return f"file:{path.resolve()}?mode=ro{'' if os.access(path.parent, os.W_OK) else '&immutable=1'}"
