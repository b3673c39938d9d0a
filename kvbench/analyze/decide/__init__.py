"""What should I do on this server: per-transfer cost fits (`fit`: α + bytes/β), prefill recompute
(`recompute`), restore plans per tier (`restore_plan`), the peer tier (`peer_tier`), the fastest
strategy per path and fragment size (`policy`), NIXL or Mooncake per path (`transport_choice`), and a
real serving trace replayed against this host's tiers (`replay/`: hit ratios, link demand, TTFT).
Built on measured results only. May import the shared leaves of analyze/, `kv` (model geometry) and
hardware peaks (labelled spec); no other room."""
