"""The openai SDK with its default retries: a create whose reply is lost on the way back is sent again, and
must not make a second response. The SDK sends no Idempotency-Key of its own (openai 3.57.0: its client
names no idempotency header), so the key is the client's to send with the create; the retry sends the same
headers and body, and the server answers it with the first response.

The reply is lost by the client's own transport (a wrapper of the SDK's HTTP transport that reads the
server's reply and then fails as a dropped connection does): the server and its store are the real ones."""

from __future__ import annotations

import uuid

import httpx
import httpx2
from openai import OpenAI

from .conftest import openai_base


class LosesFirstReply(httpx2.BaseTransport):
    """Passes every request on; the first create's reply is read in full and then lost."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()
        self.creates: list[httpx2.Headers] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/responses"):
            self.creates.append(request.headers)
            if len(self.creates) == 1:
                response.read()
                response.close()
                raise httpx2.RemoteProtocolError("connection lost before the reply was read", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_retried_create_never_makes_a_second_response(base_url: str, api_key: str) -> None:
    transport = LosesFirstReply()
    session = uuid.uuid4().hex
    client = OpenAI(
        base_url=openai_base(base_url), api_key=api_key, http_client=httpx2.Client(transport=transport)
    )
    with client:
        key = f"create-{session}"
        response = client.responses.create(
            model="echo",
            input="only once",
            metadata={"session": session},
            extra_headers={"Idempotency-Key": key},
        )
        client.responses.create(model="echo", input="without a key")
    assert response.output_text == "only once"
    # sent twice, the second a retry with the client's key, the SDK adding none of its own
    assert [headers.get("x-stainless-retry-count") for headers in transport.creates] == ["0", "1", "0"]
    assert [headers.get("idempotency-key") for headers in transport.creates] == [key, key, None]
    listed = httpx.get(
        f"{base_url}/v1beta/interactions",
        params={"labels.session": session},
        headers={"x-goog-api-key": api_key},
    ).json()
    assert [item["id"] for item in listed["interactions"]] == [response.id]
