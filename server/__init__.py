"""The edges: the Starlette app, WebSocket and REST endpoints, settings loading, CLI, adapters."""
