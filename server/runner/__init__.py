"""The use cases (create, control, background jobs, the reaper, idempotency) and the runner that runs one
interaction through a sink chosen by the create plan. Used by web and worker processes alike."""
