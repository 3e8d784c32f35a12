"""Delete by filter (`POST /{version}/interactions:purge`, after Google's AIP-165): every interaction a
filter matches goes, with the rest of its conversation (the chain before it and every turn after it).

Without `force` the request only counts what would go. With it, a job on the queue deletes, and the
request answers with an operation (`operations/<id>`) whose metadata tells the progress.

The job may be run again (a worker killed mid-job: its job is taken again), and its counts stay true
across runs: the first run keeps the conversations the filter matched as it began (and their counts), a
re-run goes on through the same ones from the first not done (deleting what is left of it), and every
delete is counted by what it really removed, in the same step as it removes it (scripts/delete.lua).
(Counted apart, a run killed with its count sent and not yet applied was counted again by the next.)
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import msgspec

from ..errors import InvalidArgument
from ..protocol.base import Wire
from ..store import keys, search_tags
from ..store.deletions import Deletions, Progress
from ..store.interactions import Interactions
from ..store.jobs import DELETION_JOB, Jobs
from ..store.search import Query, Search, ids
from .filters import Filter, to_query

#: ids read a page when collecting matches or a conversation's turns
_PAGE = 500
_SAMPLE = 10


class PurgeRequest(Wire, forbid_unknown_fields=True):
    filter: Filter = msgspec.field(default_factory=Filter)
    #: false (the default): count what would be deleted, delete nothing
    force: bool = False


class PurgeCount(Wire):
    """A dry run: how many interactions would be deleted, how many match, in how many conversations."""

    purge_count: int
    match_count: int
    conversation_count: int
    purge_sample: list[str] = []


class Operation(Wire):
    name: str
    done: bool
    metadata: dict[str, Any]
    response: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


_OPERATION_PREFIX = "operations/"


def operation_name(deletion_id: str) -> str:
    return _OPERATION_PREFIX + deletion_id


class Purges:
    def __init__(self, search: Search, interactions: Interactions, deletions: Deletions, jobs: Jobs) -> None:
        self.search = search
        self.interactions = interactions
        self.deletions = deletions
        self.jobs = jobs

    async def request(self, tenant: str, body: PurgeRequest) -> PurgeCount | Operation:
        if body.filter.is_empty():
            raise InvalidArgument(
                "give at least one field: an empty filter would delete everything", "filter"
            )
        query = to_query(body.filter, "filter.")
        if not body.force:
            return await self.count(tenant, query)
        deletion_id = "purge_" + secrets.token_urlsafe(12)
        progress = await self.deletions.create(tenant, deletion_id, msgspec.json.encode(body.filter))
        await self.jobs.enqueue_call(
            keys.deletion_job_id(tenant, deletion_id), DELETION_JOB, (tenant, deletion_id)
        )
        return _operation(deletion_id, progress)

    async def operation(self, tenant: str, deletion_id: str) -> Operation | None:
        """A purge's operation; None when the tenant has none of that id (or it finished a day ago)."""
        progress = await self.deletions.get(tenant, deletion_id)
        return None if progress is None else _operation(deletion_id, progress)

    async def count(self, tenant: str, query: Query) -> PurgeCount:
        roots, matched = await self._roots(tenant, query)
        total, sample = 0, list[str]()
        for root in roots:
            turns = await self._turns_of(tenant, root)
            total += len(turns)
            sample += turns[: _SAMPLE - len(sample)]
        return PurgeCount(
            purge_count=total, match_count=matched, conversation_count=len(roots), purge_sample=sample
        )

    async def _turns_of(self, tenant: str, root: str) -> list[str]:
        """Every turn of a conversation still stored: the later ones (their index), then the first."""
        found: list[str] = []
        start: tuple[int, str] | None = None
        while True:
            page = await self.search.page(tenant, _later_turns(root), start=start, limit=_PAGE)
            found += ids(page.found)
            if page.next is None:
                break
            start = page.next
        if await self.interactions.status(tenant, root) is not None:
            found.append(root)
        return found

    async def run(self, tenant: str, deletion_id: str) -> None:
        """The job: collect the conversations the filter matches (once), then delete them one by one."""
        progress = await self.deletions.get(tenant, deletion_id)
        if progress is None or progress.state == "done":
            return
        roots = await self.deletions.roots(tenant, deletion_id)
        if roots is None:
            query = to_query(msgspec.json.decode(progress.filter, type=Filter))
            roots, matched = await self._roots(tenant, query)
            await self.deletions.collected(tenant, deletion_id, roots, matched)
            start = 0
        else:
            # a re-run: the last run's delete under way is counted, and it goes on where that run was
            await self._count_inflight(tenant, deletion_id, progress.inflight)
            await self.deletions.update(tenant, deletion_id, state="running")
            start = progress.conversations_done
        await self._delete_conversations(tenant, deletion_id, roots, start)
        await self.deletions.update(tenant, deletion_id, state="done")
        # every process drops the histories it holds for this tenant: none may outlive what they contain
        await self.interactions.broadcast_forget(tenant)

    async def _roots(self, tenant: str, query: Query) -> tuple[list[str], int]:
        """The conversations (their first turns' ids, newest match first) of every match, and the count."""
        roots: dict[str, None] = {}
        matched = 0
        start: tuple[int, str] | None = None
        while True:
            page = await self.search.page(tenant, query, start=start, limit=_PAGE)
            matched += len(page.found)
            roots.update(dict.fromkeys(found.root for found in page.found))
            if page.next is None:
                return list(roots), matched
            start = page.next

    async def _delete_conversations(
        self, tenant: str, deletion_id: str, roots: list[str], start: int
    ) -> None:
        """`roots[start:]`, in order. Small conversations go together, up to a page of ids per delete (one
        delete per conversation cost a purge three round trips each); a conversation longer than a page
        goes alone, a page at a time. A delete counts the conversations it finished as done."""
        batch: list[str] = []
        for done, root in enumerate(roots[start:], start=start + 1):
            # from the newest each time: what the last page found is gone
            page = await self.search.page(tenant, _later_turns(root), start=None, limit=_PAGE)
            if page.next is not None:
                await self._delete(tenant, deletion_id, batch, {"conversations_done": done - 1})
                batch = []
                while page.next is not None:
                    await self._delete(tenant, deletion_id, ids(page.found), {})
                    page = await self.search.page(tenant, _later_turns(root), start=None, limit=_PAGE)
            batch += [*ids(page.found), root]
            if len(batch) >= _PAGE or done == len(roots):
                await self._delete(tenant, deletion_id, batch, {"conversations_done": done})
                batch = []

    async def _delete(self, tenant: str, deletion_id: str, batch: list[str], changes: dict[str, Any]) -> None:
        """One delete, which counts what it removed (and writes `changes`) in the same step: a run killed
        with its delete sent and its reply not read counts it all the same, once."""
        if not batch:
            return
        await self.interactions.delete(
            tenant, *batch, tally=self.deletions.tally(tenant, deletion_id, **changes)
        )

    async def _count_inflight(self, tenant: str, deletion_id: str, inflight: bytes) -> None:
        """The delete an earlier version's run had under way as it died (that version marked a delete's ids
        before it was sent, and counted them after): its ids now gone are what it removed; the rest are
        deleted again."""
        if not inflight:
            return
        marked = msgspec.json.decode(inflight, type=list[str])
        gone = [each for each in marked if await self.interactions.status(tenant, each) is None]
        await self.deletions.update(tenant, deletion_id, deleted=len(gone), inflight="")


def _later_turns(root: str) -> Query:
    return Query(tags=search_tags.conversation_tag(root))


def _operation(deletion_id: str, progress: Progress) -> Operation:
    metadata: dict[str, Any] = {
        "state": progress.state,
        "filter": msgspec.json.decode(progress.filter),
        "match_count": progress.matched,
        "conversation_count": progress.conversations,
        "conversations_done": progress.conversations_done,
        "purge_count": progress.deleted,
        "create_time": _time(progress.created_ms),
        "update_time": _time(progress.updated_ms),
    }
    done = progress.state == "done"
    return Operation(
        name=operation_name(deletion_id),
        done=done,
        metadata=metadata,
        response={"purge_count": progress.deleted} if done else None,
    )


def _time(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
