"""Tools the server runs itself for a run: remote MCP servers (`mcp_server` tools)."""
