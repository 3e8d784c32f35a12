// @google/genai running an agent: a background create, then gets until it has ended. Settings: baseUrl,
// apiKey, maxRetries (null: the SDK's default), agent, input.
import { GoogleGenAI } from "@google/genai";
import { answer, recorder } from "./common.mjs";

await answer(async ({ baseUrl, apiKey, maxRetries, agent, input }) => {
  const { sent, fetch } = recorder();
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl, fetch } });
  const options = maxRetries === null ? undefined : { maxRetries };
  const created = await ai.interactions.create({ agent, input, background: true }, options);
  const until = Date.now() + 20000;
  let got = created;
  while (["queued", "in_progress"].includes(got.status) && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    got = await ai.interactions.get(created.id, undefined, options);
  }
  return { created, got, sent: [...new Set(sent)] };
});
