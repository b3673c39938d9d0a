"""The results database: SQLite by default, any SQLAlchemy URL (PostgreSQL for a fleet)."""

from kvbench.store.connect import DEFAULT_PATH, default_url, open_store, redact
from kvbench.store.database import Store

__all__ = ["DEFAULT_PATH", "Store", "default_url", "open_store", "redact"]
