// What every script of the tests shares (tests/js_sdk.py runs them): the settings come as one JSON argument,
// the answer goes out as one line of JSON. An error an SDK throws is part of the answer ({"thrown": ...}),
// for the test to read its status and body; only a broken script exits non-zero.

export function settings() {
  return JSON.parse(process.argv[2] ?? "{}");
}

export function thrown(error) {
  return {
    thrown: {
      name: error?.constructor?.name ?? typeof error,
      status: error?.status ?? error?.statusCode ?? null,
      message: String(error?.message ?? error),
      // the openai SDK's parsed error body; @google/genai's keeps the response's body in `body` or `error`
      error: error?.error ?? error?.body ?? null,
    },
  };
}

export async function answer(body) {
  let result;
  try {
    result = await body(settings());
  } catch (error) {
    result = thrown(error);
  }
  process.stdout.write(JSON.stringify(result) + "\n");
}

// an SDK call whose error is kept as its value, so that the calls after it still run
export async function kept(promise) {
  try {
    return await promise;
  } catch (error) {
    return thrown(error);
  }
}

// a fetch for an SDK's options that keeps the method and path of every request it sends, in order
export function recorder() {
  const sent = [];
  const recorded = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? (input instanceof Request ? input.method : "GET");
    sent.push(`${method} ${url.pathname}`);
    return fetch(input, init);
  };
  return { sent, fetch: recorded };
}
