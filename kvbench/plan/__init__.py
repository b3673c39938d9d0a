"""From a suite (TOML) to the list of cases to run."""
