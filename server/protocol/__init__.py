"""Wire types of the Interactions API: pure msgspec Structs, no I/O."""
