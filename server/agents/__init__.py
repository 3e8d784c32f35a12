"""The Agents resource (spec: webhooks-agents-mcp.md §2): a tenant's named bundles of a base model, a system
instruction, tools and an agent_config (resource.py), and how `interactions.create(agent=<id>)` applies one
(apply.py)."""
