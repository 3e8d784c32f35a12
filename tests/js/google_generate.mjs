// @google/genai's models.generateContent, generateContentStream and countTokens, and a chat of two turns,
// with the server's root as its base URL. Settings: baseUrl, apiKey, retries (null: the SDK's default
// retries; 0: none), model, contents.
import { GoogleGenAI } from "@google/genai";
import { answer, recorder } from "./common.mjs";

await answer(async ({ baseUrl, apiKey, retries, model, contents }) => {
  const { sent, fetch } = recorder();
  const retryOptions = retries === null ? undefined : { attempts: retries + 1 };
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl, fetch, retryOptions } });
  const done = await ai.models.generateContent({ model, contents });
  const chunks = [];
  for await (const chunk of await ai.models.generateContentStream({ model, contents })) {
    chunks.push({ text: chunk.text ?? "", finish: chunk.candidates?.[0]?.finishReason ?? null });
  }
  const counted = await ai.models.countTokens({ model, contents });
  const chat = ai.chats.create({ model });
  const turns = [];
  for (const message of ["first", "second turn"]) {
    turns.push((await chat.sendMessage({ message })).text);
  }
  return {
    text: done.text,
    usage: done.usageMetadata,
    finish: done.candidates?.[0]?.finishReason,
    chunks,
    totalTokens: counted.totalTokens,
    turns,
    history: chat.getHistory().map((turn) => turn.role),
    sent,
  };
});
