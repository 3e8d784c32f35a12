"""The Responses API through the official openai SDK: create, get, delete, input items."""

from __future__ import annotations

from openai import OpenAI

from .checks import create, retrieve


def test_create_with_a_string_input(oai: OpenAI) -> None:
    response = create(oai, model="echo", input="Hello there", instructions="Be terse.")
    assert response.status == "completed"
    assert response.output_text == "Hello there"
    assert response.instructions == "Be terse."
    got = retrieve(oai, response.id)
    assert got.output_text == "Hello there"
