"""Model backends: one module per provider, sans-I/O stream decoders, and model routing."""
