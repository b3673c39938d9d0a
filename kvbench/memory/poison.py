"""The byte a reset writes into every destination before a copy: the fill pattern
(kvbench/memory/pattern.py) never holds it, so a byte a copy skipped still holds it afterwards.
Apart from the pattern so that the pattern's compiled kernels (pattern_kernels.py) and the pattern
itself both import it from below."""

POISON = 0xA5
