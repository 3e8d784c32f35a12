"""Interactions in Redis: key names, Lua scripts and the repository."""
