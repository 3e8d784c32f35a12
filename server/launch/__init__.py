"""Starting the service as `python -m server` (what `make run` runs) and `python -m workers` do: the
checkout's server lock, the private redis-server, the HTTP port, and processes that die with their parent."""
