"""Interactions in Redis: both clients (store.py), one repository per concern, key names, Lua scripts."""
