"""The search tags of an interaction, and the tags a search asks for (scripts/_index.lua keeps an index
per tag). A tag holds no space (the scripts split on spaces): names and values in it are percent-encoded.

    all              every interaction
    root             the first turn of a conversation (no previous_interaction_id)
    m:<model>        its model, without a `models/` prefix
    a:<agent>        its agent
    l:<key>=<value>  one of its labels
    c:<id>           a later turn of the conversation whose first turn is <id> (create.lua adds it)
    d:<dialect>      made through a dialect that lists its own (StoredConfig.dialect: chat completions)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import quote, unquote

from ..protocol.interaction import InteractionConfig

ALL: Final = "all"
ROOT: Final = "root"


def _encoded(value: str) -> str:
    return quote(value, safe="")


def model_of(tags: str) -> str:
    """The model (or else the agent) a record's tags name ('' for none)."""
    agent = ""
    for tag in tags.split():
        if tag.startswith("m:"):
            return unquote(tag[2:])
        if tag.startswith("a:"):
            agent = unquote(tag[2:])
    return agent


def model_tag(model: str) -> str:
    return "m:" + _encoded(model.removeprefix("models/"))


def agent_tag(agent: str) -> str:
    return "a:" + _encoded(agent)


def label_tag(key: str, value: str) -> str:
    return f"l:{_encoded(key)}={_encoded(value)}"


def conversation_tag(root_id: str) -> str:
    return "c:" + root_id


def dialect_tag(dialect: str) -> str:
    return "d:" + _encoded(dialect)


def tags_of(
    config: InteractionConfig, previous_interaction_id: str | None, dialect: str | None = None
) -> str:
    """The tags of a new interaction, but its conversation's (the script knows that one)."""
    tags = [ALL]
    if dialect:
        tags.append(dialect_tag(dialect))
    if not previous_interaction_id:
        tags.append(ROOT)
    if config.model:
        tags.append(model_tag(config.model))
    if config.agent:
        tags.append(agent_tag(config.agent))
    tags += [label_tag(key, value) for key, value in sorted((config.labels or {}).items())]
    return " ".join(tags)


def wanted(
    *,
    labels: Mapping[str, str],
    model: str | None,
    agent: str | None,
    roots_only: bool,
    conversation: str | None = None,
    dialect: str | None = None,
) -> str:
    """The tags an interaction must all have to match a search."""
    tags = [label_tag(key, value) for key, value in sorted(labels.items())]
    if dialect:
        tags.append(dialect_tag(dialect))
    if model:
        tags.append(model_tag(model))
    if agent:
        tags.append(agent_tag(agent))
    if roots_only:
        tags.append(ROOT)
    if conversation:
        tags.append(conversation_tag(conversation))
    return " ".join(tags or [ALL])
