"""Replaying a serving trace against the tiers this server measured (docs/replay.md): the tiered prefix
cache (cache.py, policies.py), its prices (pricing.py), the links it loads (links.py), and the answer
(result.py)."""
