"""OpenAI's `metadata`, `user` and `safety_identifier` as an interaction's labels, for both of OpenAI's
dialects: one stored record is one response or one stored chat completion, and the list, search and purge
find either by the same labels.

`metadata` is the labels themselves, within OpenAI's limits (16 pairs, keys of 64 characters, values of
512: a client written for OpenAI never meets a lower one here). `user` and `safety_identifier` (how OpenAI
tells end users apart) are kept as two labels of their own, so that a list or a search finds an end user's
responses and completions; they are left out of the `metadata` either dialect shows.
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import InvalidArgument

USER_LABEL: Final = "openai.user"
SAFETY_LABEL: Final = "openai.safety_identifier"
MAX_PAIRS: Final = 16
MAX_KEY: Final = 64
MAX_VALUE: Final = 512


def labels_of(raw: dict[str, Any]) -> dict[str, str] | None:
    """The labels of a request body's `metadata`, `user` and `safety_identifier`; a 400 names a field
    that breaks OpenAI's limits or is not a string."""
    metadata = raw.get("metadata")
    labels: dict[str, str] = {}
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise InvalidArgument("Expected an object of strings", "metadata")
        if len(metadata) > MAX_PAIRS:
            raise InvalidArgument(f"At most {MAX_PAIRS} pairs are allowed", "metadata")
        for key, value in metadata.items():
            if len(key) > MAX_KEY:
                raise InvalidArgument(f"Keys are at most {MAX_KEY} characters", f"metadata.{key[:MAX_KEY]}")
            if not isinstance(value, str) or len(value) > MAX_VALUE:
                raise InvalidArgument(
                    f"Expected a string of at most {MAX_VALUE} characters", f"metadata.{key}"
                )
            labels[key] = value
    for key, label in (("user", USER_LABEL), ("safety_identifier", SAFETY_LABEL)):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > MAX_VALUE:
            raise InvalidArgument(f"Expected a string of at most {MAX_VALUE} characters", key)
        labels[label] = value
    return labels or None


def metadata_of(labels: dict[str, str] | None) -> tuple[dict[str, str], str | None, str | None]:
    """(metadata, user, safety_identifier) of the labels."""
    if not labels:
        return {}, None, None
    metadata = {key: value for key, value in labels.items() if key not in (USER_LABEL, SAFETY_LABEL)}
    return metadata, labels.get(USER_LABEL), labels.get(SAFETY_LABEL)
