"""Every Redis key and channel name the server uses, in one place.

`{t}` is a hash tag of the tenant, so all of one tenant's keys share a Cluster slot; the tenant is a
digest of the API key (or a configured name), never the key itself.
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
#: HASH of the RS256 keys that sign dynamic webhook deliveries (server-wide: one JWKS for every tenant):
#: `current` -> kid, `key:<kid>` -> the key's record (its private half sealed), `retire:<kid>` -> when a
#: replaced key stops being published (ms); one key, so one script changes it all (store/signing_keys.py)
SIGNING_KEYS: Final = "ix:signing-keys"


def wake(queue_name: str) -> str:
    """LIST of tokens, one per job queued on `queue_name`: an idle worker takes one (BLPOP) and reads the
    queue, so a job wakes one worker and idle workers need not poll."""
    return f"ix:wake:{queue_name}"


def workers(queue_name: str) -> str:
    """ZSET of the workers consuming a queue ("host/pid/random"), scored by their last heartbeat (s)."""
    return f"ix:workers:{queue_name}"


def tenant_prefix(tenant: str) -> str:
    return f"ix:{{{tenant}}}:"


def interaction(tenant: str, interaction_id: str) -> str:
    """HASH: status (a lifecycle state), fence, attempts, bg, log, prev, created, updated, seq, cfg, in, out,
    cexp (the earliest expiry among its ancestors, ms), depth (its place in its chain, from 1)."""
    return f"ix:{{{tenant}}}:{interaction_id}"


def events(tenant: str, interaction_id: str) -> str:
    """STREAM of pre-encoded SSE events, entry id `0-<seq>` for event `evt_<seq>`."""
    return f"ix:{{{tenant}}}:{interaction_id}:ev"


def cancel_ack(tenant: str, interaction_id: str) -> str:
    """LIST the cancelled run pushes to once its partial output is saved."""
    return f"ix:{{{tenant}}}:{interaction_id}:ack"


def idempotency(tenant: str, key_digest: str) -> str:
    """STRING "<interaction id> <body digest>" for an Idempotency-Key."""
    return f"ix:{{{tenant}}}:idem:{key_digest}"


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
    """Field names of the interaction hash (the Lua scripts use the same literals)."""

    STATUS: Final = "status"
    FENCE: Final = "fence"
    ATTEMPTS: Final = "attempts"
    BACKGROUND: Final = "bg"
    LOG: Final = "log"
    PREV: Final = "prev"
    CREATED: Final = "created"
    UPDATED: Final = "updated"
    SEQ: Final = "seq"
    CONFIG: Final = "cfg"
    INPUT: Final = "in"
    OUTPUT: Final = "out"
    CHAIN_EXPIRY: Final = "cexp"
    DEPTH: Final = "depth"
