"""Consolidation (seed 002): turning pending episodes into durable facts and rules.

``prompt`` builds what the model reads (the episodes as data, the facts and rules it
may update or confirm); ``parse`` reads its answer into actions, never raising. The
worker that runs them is ``actors.consolidation``.
"""
