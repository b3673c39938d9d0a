"""KV-cache geometry, layouts and the descriptor lists that every executor consumes."""
