"""Cluster mode: several ``mnemo serve`` nodes on one object-store data directory, each
user served by one home node at a time (see ``docs/scaling.md``)."""
