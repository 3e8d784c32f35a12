// The public HTTP API, same origin, with the key the user typed: plain JSON calls and SSE streams read
// from fetch (EventSource cannot send the x-goog-api-key header).

const BASE = "/v1beta";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.httpStatus = status;
    this.code = error.code;
    this.status = error.status;
  }

  toString() {
    const kind = [this.httpStatus, this.status].filter(Boolean).join(" ");
    return `${kind}: ${this.message}`;
  }
}

export class Api {
  constructor(keyOf) {
    this.keyOf = keyOf;
  }

  headers(extra) {
    return { "x-goog-api-key": this.keyOf(), ...extra };
  }

  async call(method, path, body) {
    const init = { method, headers: this.headers() };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(BASE + path, init);
    return readJson(response);
  }

  // Streams a request's SSE events to onEvent(data) until the stream ends; resolves once it has ended.
  async stream(method, path, body, onEvent, signal) {
    const init = { method, signal, headers: this.headers({ accept: "text/event-stream" }) };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(BASE + path, init);
    const type = response.headers.get("content-type") || "";
    if (!response.ok || !type.startsWith("text/event-stream")) {
      return readJson(response);
    }
    await readEvents(response.body, onEvent);
    return null;
  }

  models(pageToken) {
    const query = pageToken ? `?pageToken=${encodeURIComponent(pageToken)}` : "";
    return this.call("GET", `/models${query}`);
  }

  get(id) {
    return this.call("GET", `/interactions/${encodeURIComponent(id)}?stream=false`);
  }

  cancel(id) {
    return this.call("POST", `/interactions/${encodeURIComponent(id)}/cancel`);
  }

  create(body) {
    return this.call("POST", "/interactions", body);
  }

  follow(id, lastEventId, onEvent, signal) {
    let query = "stream=true";
    if (lastEventId) query += `&last_event_id=${encodeURIComponent(lastEventId)}`;
    return this.stream("GET", `/interactions/${encodeURIComponent(id)}?${query}`, undefined, onEvent, signal);
  }

  list(params) {
    return this.call("GET", `/interactions?${params.toString()}`);
  }
}

async function readJson(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { error: { message: text.slice(0, 300) } };
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

// SSE framing (spec §9.2): events end at a blank line; only `data:` lines matter here, since the JSON's
// event_type is the discriminator and event_id the resume token.
async function readEvents(stream, onEvent) {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data && data !== "[DONE]") onEvent(JSON.parse(data));
    }
  }
}
