"""The concurrency: session actors, their registry, the archive writer, and the ports they use."""
