"""The results database: SQLite by default, any SQLAlchemy URL (PostgreSQL for a fleet)."""

from kvbench.store.database import Store, default_url, open_store

__all__ = ["Store", "default_url", "open_store"]
