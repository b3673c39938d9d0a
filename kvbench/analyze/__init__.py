"""Turning stored results into answers: per-transfer cost fits, restore-time plans."""
