// The openai SDK's Responses create and retrieve. Settings: baseURL, apiKey, maxRetries (null: the SDK's
// default), model, input.
import OpenAI from "openai";
import { answer, recorder } from "./common.mjs";

await answer(async ({ baseURL, apiKey, maxRetries, model, input }) => {
  const { sent, fetch } = recorder();
  const client = new OpenAI({ baseURL, apiKey, fetch, ...(maxRetries === null ? {} : { maxRetries }) });
  const created = await client.responses.create({ model, input });
  const retrieved = await client.responses.retrieve(created.id);
  // output_text: the SDK's own join of the output's text parts, read from what we answered
  return { created, output_text: created.output_text, retrieved, sent };
});
