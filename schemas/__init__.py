"""msgspec Structs only: wire messages, stored records, model output, settings. No I/O."""
