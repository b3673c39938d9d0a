"""Memory kinds: where a benchmark's source and destination bytes live (`kinds.allocate`,
`kinds.parse_kind`). Nothing is imported here: a module that parses a kind's name
(`kind_names`) must not load the allocators and numpy with it."""
