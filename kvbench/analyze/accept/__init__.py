"""Does this server pass: rules kept as data (suites/rules/*.toml), the cases each covers, the rule
kinds that judge them (registered in kinds/), host profiles and the inventory they expect, the peaks
a verdict is judged against where the user gave their own (`user_peaks`), GPU health counters,
verdicts too close to call, and the one overall verdict with its JUnit form. The verdict record
itself (`analyze/case_verdict.py`) sits below, shared with `regress` (contention's verdict names).
May import the shared leaves of analyze/, `regress` (a contended case is judged as compare judges
it), the store, hardware facts, `kv`; not `decide` or `links`."""
