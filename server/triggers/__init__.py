"""The Triggers resource: interactions created on a cron schedule, in a time zone, each run recorded as an
execution (README, "Triggers").

`schedule` reads a cron expression in a zone, `rules` what a create or an update may say, `template` the
interaction each execution creates (checked at create as a create would be), `headers` its MCP servers'
header values (sealed at rest), `wire` the SDK's shapes, `resource` the API's operations, `firing` a
scheduled time's fire (a job due at that time, run by a worker), and `outcome` how an execution ends with
its interaction.
"""
