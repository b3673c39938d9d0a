"""How a run lives and dies: a suite planned and run (once, or `--repeat` times in fresh
processes), each case run and stored by the runner, the run's owner and heartbeat (lifecycle), the
signals that end it (interrupts), and this host as the run records it."""
