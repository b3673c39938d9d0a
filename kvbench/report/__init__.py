"""Presenting results: terminal tables, CSV and JSON exports (plots and HTML come later)."""
