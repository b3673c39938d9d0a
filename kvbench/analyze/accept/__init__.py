"""Acceptance of a server: rules kept as data (suites/rules/*.toml), the cases each covers, the
rule kinds that judge them (registered in kinds.py), host profiles and the inventory they expect,
GPU health counters, verdicts too close to call, and the one overall verdict with its JUnit form."""
