"""Tools the server runs itself for a run: remote MCP servers (`mcp_server` tools).

mcp.py is the interface the runner uses (`McpSessions`: open, tools, call, aclose; `McpTool`, `CallResult`);
connection.py one server's connection on the `mcp` SDK (its own task, pinned to the checked addresses);
selection.py the request's servers checked and their `allowed_tools`; checks.py those checks and each url's
addresses, before anything is stored (a create's and an agent's); results.py a result's shape and size
bound; errors.py the errors of opening (a 400 naming `tools[i].url`, a 502/504 naming the server).
"""
