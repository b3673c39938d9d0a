"""cuda-python as the kvbench GPU stand-in answers it (TEST ONLY)."""
