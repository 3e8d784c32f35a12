"""Every Redis key and channel name the server uses, in one place.

`{t}` is a hash tag of the tenant, so all of one tenant's keys share a Cluster slot; the tenant is a
digest of the API key (or a configured name), never the key itself. The keys without a tenant are shared:
the signing keys live with the records; the running set, the channels, the wake tokens and turns, the
workers and arq's keys live on REDIS_QUEUE_URL's Redis when there is one (store/queue_side.py).
"""

from __future__ import annotations

from typing import Final

from arq.constants import in_progress_key_prefix, job_key_prefix

#: sorted set of running interactions ("tenant/id"), scored by the time their lease runs out (ms)
RUNNING: Final = "ix:running"
#: pub/sub channel carrying "tenant/id" of interactions to stop at once
CANCEL_CHANNEL: Final = "ix:cancel"
#: pub/sub channel carrying a tenant whose cached histories every process drops (after a delete)
FORGET_CHANNEL: Final = "ix:forget"
#: pub/sub channel carrying "<due ms> <job>" of each job queued for later (wake.lua), which every worker's
#: timer notes: the worker that took the job's early token, the one that knew its time, may be gone by then
DUE_CHANNEL: Final = "ix:due"
#: ZSET of every tenant's active triggers ("tenant/trigger id") by the time their fire job was last queued
#: for (ms): the sweep's index (triggers/sweep.py). With the records (one key, one Cluster slot), written
#: after the trigger's own write: a write lost leaves a score too early (a look for nothing), never too late
TRIGGER_TIMES: Final = "ix:trigger-times"
#: HASH of the RS256 keys that sign dynamic webhook deliveries (server-wide: one JWKS for every tenant):
#: `current` -> kid, `key:<kid>` -> the key's record (its private half sealed), `retire:<kid>` -> when a
#: replaced key stops being published (ms); one key, so one script changes it all (store/signing_keys.py)
SIGNING_KEYS: Final = "ix:signing-keys"


def wake(queue_name: str) -> str:
    """LIST of tokens, one per job queued on `queue_name`: an idle worker takes one (BLPOP) and takes the
    next tenant's next job (store/turns.py), so a job wakes one worker and idle workers need not poll.
    The queue's ring and its tenants' lists are named from it, as scripts/_turns.lua names them."""
    return f"ix:wake:{queue_name}"


def ring(queue_name: str) -> str:
    """LIST of the tenants with jobs waiting on `queue_name`, each once, in turn (scripts/_turns.lua)."""
    return f"{wake(queue_name)}:ring"


def waiting(queue_name: str, tenant: str) -> str:
    """LIST of a tenant's jobs waiting on `queue_name`, oldest first; no hash tag: it is the queue's."""
    return f"{wake(queue_name)}:t:{tenant}"


def deferred(queue_name: str) -> str:
    """ZSET of the jobs queued on `queue_name` for later, scored by when a token is next due for each (ms):
    their due time, then a retry of the token until a worker took the job (store/scripts/due.lua)."""
    return f"ix:later:{queue_name}"


def workers(queue_name: str) -> str:
    """ZSET of the workers consuming a queue ("host/pid/random"), scored by their last heartbeat (s)."""
    return f"ix:workers:{queue_name}"


def tenant_prefix(tenant: str) -> str:
    return f"ix:{{{tenant}}}:"


def interaction(tenant: str, interaction_id: str) -> str:
    """HASH: status (a lifecycle state), fence, attempts, bg, log, prev, created, updated, seq, cexp (the
    earliest expiry among its ancestors, ms), depth (its place in its chain, from 1), root and ix (its
    conversation and search tags: Field). Its blobs are in its `body` (those of an earlier version's
    record in the hash itself: cfg, in, out)."""
    return f"ix:{{{tenant}}}:{interaction_id}"


#: what an interaction's hash key is followed by in the name of its body (the scripts name it the same way:
#: scripts/_body.lua)
BODY_SUFFIX: Final = ":b"


def body(tenant: str, interaction_id: str) -> str:
    """STRING: the interaction's blobs cfg, in and out as netstrings, expiring with its hash."""
    return interaction(tenant, interaction_id) + BODY_SUFFIX


#: what an interaction's hash key is followed by in the names of its event log and its cancel list (the
#: delete script is given them)
EVENTS_SUFFIX: Final = ":ev"
ACK_SUFFIX: Final = ":ack"


def events(tenant: str, interaction_id: str) -> str:
    """STREAM of pre-encoded SSE events, entry id `0-<seq>` for event `evt_<seq>`."""
    return interaction(tenant, interaction_id) + EVENTS_SUFFIX


def cancel_ack(tenant: str, interaction_id: str) -> str:
    """LIST the cancelled run pushes to once its partial output is saved."""
    return interaction(tenant, interaction_id) + ACK_SUFFIX


def search_index(tenant: str, tag: str) -> str:
    """ZSET of the tenant's interactions with search tag `tag` (store/search_tags.py), scored by their
    creation (ms). The scripts name it the same way from the tenant prefix (scripts/_index.lua)."""
    return f"ix:{{{tenant}}}:idx:{tag}"


def search_expiries(tenant: str) -> str:
    """ZSET of "<id> <tags>" of the tenant's interactions, scored by when each expires: a write takes the
    expired ones out of their search indexes (scripts/_index.lua names it the same way)."""
    return f"ix:{{{tenant}}}:expiries"


def usage(tenant: str, day: str) -> str:
    """HASH of what the tenant's interactions that ended on `day` (UTC, YYYY-MM-DD) used: `<group>|<what>`
    -> a count, where a group is one of an interaction's search tags (`all`, its model's, its agent's, its
    labels') and what is `s:<status>` (interactions that ended so), in, out, cached, thought, total (tokens)
    or calls (model calls); added to by the step that settles an interaction (scripts/_usage.lua)."""
    return f"ix:{{{tenant}}}:usage:{day}"


def minute_tokens(tenant: str) -> str:
    """HASH of the tokens the tenant's interactions used by minute (Unix ms // 60000 -> tokens), this
    minute's and the last: what its tokens_per_minute limit reads (scripts/limits.lua). Added to with its
    usage of the day; the scripts name it from that key's tenant prefix the same way (_usage, limits)."""
    return f"ix:{{{tenant}}}:tpm"


def request_rate(tenant: str) -> str:
    """HASH of the tenant's request rate: `req`, the theoretical arrival time (ms) of the generic cell rate
    algorithm its requests_per_minute limit runs (scripts/limits.lua names it from the tenant's prefix)."""
    return f"ix:{{{tenant}}}:rate"


def background_runs(tenant: str) -> str:
    """ZSET of the tenant's background interactions admitted under its background_runs limit (id -> ms
    when admitted); those ended are dropped when it is reached (scripts/limits.lua names it from the
    tenant's prefix)."""
    return f"ix:{{{tenant}}}:bg"


def stored_interactions(tenant: str) -> str:
    """HASH of the tenant's stored interactions by the UTC day each expires (ms // 86400000 -> count): what
    its stored_interactions limit reads (scripts/limits.lua). The scripts that store, keep alive and delete
    interactions keep it, naming it from the tenant's prefix the same way (scripts/_stored.lua)."""
    return f"ix:{{{tenant}}}:stored"


def deletion(tenant: str, deletion_id: str) -> str:
    """HASH of a delete-by-filter job's progress (store/deletions.py)."""
    return f"ix:{{{tenant}}}:deletion:{deletion_id}"


def deletion_job_id(tenant: str, deletion_id: str) -> str:
    """The arq job that deletes what a filter matches."""
    return f"del/{tenant}/{deletion_id}"


def idempotency(tenant: str, key_digest: str) -> str:
    """STRING "<interaction id> <body digest>" for an Idempotency-Key."""
    return f"ix:{{{tenant}}}:idem:{key_digest}"


def webhooks(tenant: str) -> str:
    """ZSET of a tenant's webhook ids, scored by their creation (ms): the list, and its count."""
    return f"ix:{{{tenant}}}:webhooks"


def webhooks_enabled(tenant: str) -> str:
    """SET of a tenant's enabled webhook ids. The scripts that end an interaction queue its webhook event
    only when this set is not empty (or the interaction has a webhook_config)."""
    return f"ix:{{{tenant}}}:webhooks:enabled"


def webhook(tenant: str, webhook_id: str) -> str:
    """HASH of one webhook (WebhookField names its fields)."""
    return f"ix:{{{tenant}}}:webhook:{webhook_id}"


def webhook_deliveries(tenant: str, webhook_id: str) -> str:
    """LIST of a webhook's last delivery attempts (JSON), newest first, capped."""
    return f"ix:{{{tenant}}}:webhook:{webhook_id}:deliveries"


def agents(tenant: str) -> str:
    """ZSET of a tenant's agent ids, scored by their creation (ms): the list, and its count."""
    return f"ix:{{{tenant}}}:agents"


def agent(tenant: str, agent_id: str) -> str:
    """STRING: one agent, as JSON (store/agents.py AgentRecord)."""
    return f"ix:{{{tenant}}}:agent:{agent_id}"


def triggers(tenant: str) -> str:
    """ZSET of a tenant's trigger ids, scored by their creation (ms): the list, and its count."""
    return f"ix:{{{tenant}}}:triggers"


def trigger(tenant: str, trigger_id: str) -> str:
    """HASH of one trigger (TriggerField names its fields)."""
    return f"ix:{{{tenant}}}:trigger:{trigger_id}"


def trigger_executions(tenant: str, trigger_id: str) -> str:
    """HASH of a trigger's executions: execution id -> the execution (JSON, store/triggers.py)."""
    return trigger(tenant, trigger_id) + ":ex"


def trigger_execution_ids(tenant: str, trigger_id: str) -> str:
    """ZSET of a trigger's execution ids, scored by their scheduled time (ms): their list, oldest first."""
    return trigger(tenant, trigger_id) + ":exl"


#: how the ids of trigger fire jobs start (one job per trigger and scheduled time: trigger_fire_job_id)
TRIGGER_JOB_PREFIX: Final = "trig/"


def trigger_fire_job_id(tenant: str, trigger_id: str, scheduled_ms: int) -> str:
    """The arq job that fires a trigger at one scheduled time: one id per time, so that a time queued
    twice (a fire re-run after its worker died) is one job."""
    return f"{TRIGGER_JOB_PREFIX}{tenant}/{trigger_id}/{scheduled_ms}"


def trigger_idempotency_key(trigger_id: str, execution_id: str) -> str:
    """The Idempotency-Key an execution creates its interaction under: a fire run twice makes one."""
    return f"trigger/{trigger_id}/{execution_id}"


def webhook_delivered(tenant: str, event_id: str, target: str) -> str:
    """STRING set once an event reached a target, so that a retry queued before a late success (a worker
    killed after its receiver's 2xx, its job re-run) is not sent again."""
    return f"ix:{{{tenant}}}:delivered:{event_id}:{target}"


def event_job_id(tenant: str, interaction_id: str) -> str:
    """The arq job of an interaction's end, which every subscriber of it hears (its webhooks, the trigger
    execution that made it): one per interaction, a status change that notifies happens once, as it ends.
    Its `whev/` is from when webhooks were its only subscriber (a job an earlier version queued runs)."""
    return f"whev/{tenant}/{interaction_id}"


def member(tenant: str, interaction_id: str) -> str:
    """How a run is named in RUNNING, in cancel messages and in job ids."""
    return f"{tenant}/{interaction_id}"


def job_id(tenant: str, interaction_id: str, fence: int) -> str:
    """The arq job that runs an interaction under a fence (a new fence, a new job)."""
    return f"{tenant}/{interaction_id}/{fence}"


# arq's own keys for a job (named by arq.constants): queued jobs have the first, started ones both
def arq_job(job: str) -> str:
    return job_key_prefix + job


def arq_in_progress(job: str) -> str:
    return in_progress_key_prefix + job


def split_member(value: str) -> tuple[str, str]:
    tenant, _, interaction_id = value.partition("/")
    return tenant, interaction_id


class Field:
    """Field names of the interaction hash (the Lua scripts use the same literals). A field at its default
    is not stored (store/new_records.py): bg, log "0"; fence, attempts 0; updated = created; depth 1; root
    its own id."""

    STATUS: Final = "status"
    FENCE: Final = "fence"
    ATTEMPTS: Final = "attempts"
    BACKGROUND: Final = "bg"
    LOG: Final = "log"
    PREV: Final = "prev"
    CREATED: Final = "created"
    UPDATED: Final = "updated"
    SEQ: Final = "seq"
    #: the blobs (in the body; in the hash of an earlier version's record)
    CONFIG: Final = "cfg"
    INPUT: Final = "in"
    OUTPUT: Final = "out"
    CHAIN_EXPIRY: Final = "cexp"
    DEPTH: Final = "depth"
    #: "1" when the request had a webhook_config: its end is notified even with no enabled webhook
    WEBHOOK_CONFIG: Final = "wh"
    #: the trigger execution that made it (store/triggers.py `marker`), which hears its end (_notify.lua)
    TRIGGER: Final = "trg"
    #: the id of its conversation's first interaction
    ROOT: Final = "root"
    #: its search tags, space-separated (store/search_tags.py)
    TAGS: Final = "ix"
    #: the upstream's own run of its turn (a Google background interaction), once the upstream named it
    REMOTE: Final = "rid"


class WebhookField:
    """Field names of a webhook's hash (the Lua scripts use the same literals)."""

    #: the resource's public fields, as one JSON object (id, name, uri, subscribed_events, create/update time)
    RESOURCE: Final = "res"
    #: enabled, disabled or disabled_due_to_failed_deliveries (scripts change it: kept out of RESOURCE)
    STATE: Final = "state"
    #: JSON list of the signing secrets, current first: {"sealed", "truncated", "expire_ms" (null: none)}
    SECRETS: Final = "secrets"
    #: events whose every retry failed, in a row (reset by a delivered event and by enabling it again)
    FAILS: Final = "fails"


class TriggerField:
    """Field names of a trigger's hash (the Lua scripts use the same literals)."""

    #: what never changes after its create, as one JSON object (store/triggers.py TriggerConfig)
    CONFIG: Final = "res"
    #: its display_name (changed by an update: kept out of CONFIG)
    NAME: Final = "name"
    #: active, paused or error
    STATUS: Final = "status"
    #: when it fires next (ms); a fire job for that time is queued while it is active
    NEXT: Final = "next"
    LAST_RUN: Final = "last_run"
    LAST_PAUSE: Final = "last_pause"
    LAST_RESUME: Final = "last_resume"
    UPDATED: Final = "update"
    #: the last interaction it created, which its next one continues
    PREV: Final = "prev"
    #: executions failed (or timed out) in a row
    FAILS: Final = "fails"
    #: the id of its execution in progress, if any: a time that comes while it runs is skipped
    RUNNING: Final = "running"
