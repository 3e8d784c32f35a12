// @google/genai's interactions create and get, with the server's root as its base URL. Settings: baseUrl,
// apiKey, maxRetries (null: the SDK's default; the interactions client takes it per request), model, input.
import { GoogleGenAI } from "@google/genai";
import { answer, recorder } from "./common.mjs";

await answer(async ({ baseUrl, apiKey, maxRetries, model, input }) => {
  const { sent, fetch } = recorder();
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl, fetch } });
  const options = maxRetries === null ? undefined : { maxRetries };
  const created = await ai.interactions.create({ model, input }, options);
  const got = await ai.interactions.get(created.id, undefined, options);
  return { created, got, sent };
});
