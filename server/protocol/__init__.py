"""Pure code, no I/O: the wire types (msgspec Structs), their codec, the lifecycle table, the views, SSE
framing and the events rebuilt from a record."""
