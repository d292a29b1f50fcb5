"""Pure, synchronous domain logic: no I/O, no anyio, no LanceDB, no Ollama."""
