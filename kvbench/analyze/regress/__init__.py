"""Is it slower than before, and can I trust that: one case of NEW against BASE weighed against the
case's between-run noise (`noise`: the one allowance), contention that could fake a drop
(`contended`), a baseline's `--repeat` batch pooled (`pooled`) or its history carried in an export
(`carried`), a case's history cut into level segments (`history`), and the allowance CI dashboards
show (`export`). May import the shared leaves of analyze/ (runs, paired, case_verdict), the store,
hardware facts and the benchmarks' describer; no other room."""
