"""Model backends: one package per provider, sans-I/O stream decoders, and model routing."""
