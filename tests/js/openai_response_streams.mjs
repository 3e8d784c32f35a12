// The openai SDK's Responses streams: create({stream: true}), the responses.stream() helper and its final
// response, and a background response's stream cut after `cut` events and resumed with
// retrieve(id, {stream: true, starting_after}). Settings: baseURL, apiKey, model, slowModel, input, cut.
import OpenAI from "openai";
import { answer } from "./common.mjs";

function brief(event) {
  return { type: event.type, sequence_number: event.sequence_number, delta: event.delta ?? null };
}

await answer(async ({ baseURL, apiKey, model, slowModel, input, cut }) => {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  const created = [];
  for await (const event of await client.responses.create({ model, input, stream: true })) {
    created.push(brief(event));
  }
  const helper = client.responses.stream({ model, input });
  const snapshots = [];
  helper.on("response.output_text.delta", (event) => snapshots.push(event.snapshot));
  const final = await helper.finalResponse();
  const seen = [];
  let responseId = null;
  for await (const event of await client.responses.create({
    model: slowModel,
    input,
    background: true,
    stream: true,
  })) {
    responseId = responseId ?? event.response?.id;
    seen.push(brief(event));
    if (seen.length === cut) break;
  }
  const after = seen[seen.length - 1].sequence_number;
  const resumed = [];
  const stream = await client.responses.retrieve(responseId, { stream: true, starting_after: after });
  for await (const event of stream) resumed.push(brief(event));
  const full = [];
  for await (const event of await client.responses.retrieve(responseId, { stream: true })) {
    full.push(brief(event));
  }
  return { created, snapshots, final, seen, resumed, full };
});
