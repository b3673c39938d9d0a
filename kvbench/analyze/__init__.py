"""Stored results turned into answers, in rooms by the question a reader asks:

- `regress/`: is it slower than before, and can I trust that (compare, between-run noise and the one
  allowance, contention, pooled and carried bases, history, the CI dashboards' export);
- `decide/`: what should I do on this server (per-transfer fits, recompute, restore plans, the peer
  tier, policy, transport choice);
- `links/`: how the links of a cluster look, and did one drop (the link matrix, link compare and its
  noise, nvbandwidth's shape);
- `accept/`: does this server pass (rules, profiles, inventory, health, the one verdict).

The modules at this level are the shared leaves every room may import and that import no room: a
stored run or export read back (`runs`, `cluster_runs`), paired ratios (`paired`), one verdict record
and its vocabulary (`case_verdict`), the outlier rule (`spread`); and `fleet` (which of many servers
stands out). Rooms import downward only: `accept` and `links` may import `regress`; `regress` and
`decide` import no other room (tests/test_architecture.py)."""
