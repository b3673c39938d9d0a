"""The far side of a network benchmark: what both sides agree on, the side that serves, and the
initiator's view of it."""
