// The openai SDK's models list and retrieve, with the base URL it is given (`<server>/v1` as the README
// says, or `<server>/openai/v1`). Settings: baseURL, apiKey, maxRetries (null: the SDK's default), ids.
import OpenAI from "openai";
import { answer, kept, recorder } from "./common.mjs";

await answer(async ({ baseURL, apiKey, maxRetries, ids }) => {
  const { sent, fetch } = recorder();
  const client = new OpenAI({ baseURL, apiKey, fetch, ...(maxRetries === null ? {} : { maxRetries }) });
  const listed = [];
  for await (const model of client.models.list()) {
    listed.push(model);
  }
  const retrieved = [];
  for (const id of ids) {
    retrieved.push(await kept(client.models.retrieve(id)));
  }
  return { listed, retrieved, sent };
});
