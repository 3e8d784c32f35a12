// The playground: chat with streaming, the conversation's chain, background runs with cancel, a stream
// resumed after a reload, and the list of stored interactions. Only the public API is called.
import { Api } from "./api.js";
import { $, chainCard, listRow, message, outputText } from "./view.js";

const KEY = "ix.key";
const MODEL = "ix.model";
// the conversation: its messages, its last interaction, and the run being streamed (id and last event
// seen), in one entry so that the text shown and the resume point are always saved together
const CONVERSATION = "ix.conversation";

const api = new Api(() => $("api-key").value.trim());
let conversation = loadConversation();
let controller = null;
let listToken = null;
// set as the page goes away: a stream cut by a reload is resumed by the next page, not settled by this one
let leaving = false;

function loadConversation() {
  try {
    const saved = JSON.parse(localStorage.getItem(CONVERSATION));
    if (saved && Array.isArray(saved.messages)) return saved;
  } catch {
    // a damaged entry: start afresh
  }
  return { messages: [], lastId: null, active: null };
}

function save() {
  localStorage.setItem(CONVERSATION, JSON.stringify(conversation));
}

function showError(error) {
  if (error && error.name === "AbortError") return;
  $("error-text").textContent = String(error && error.message && !error.httpStatus ? error.message : error);
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error-text").textContent = "";
}

function setStatus(status, id) {
  const node = $("run-status");
  node.dataset.status = status || "";
  node.textContent = status ? `${status}${id ? ` · ${id}` : ""}` : "";
}

function renderMessages() {
  const box = $("conversation");
  box.replaceChildren(...conversation.messages.map((m) => message(m.role, m.text, m.id, m.status)));
  box.scrollTop = box.scrollHeight;
}

function lastModelMessage() {
  return conversation.messages[conversation.messages.length - 1];
}

function showText(entry) {
  const nodes = $("conversation").querySelectorAll(".msg");
  const node = nodes[nodes.length - 1];
  if (!node) return;
  node.querySelector(".text").textContent = entry.text;
  node.dataset.id = entry.id || "";
  $("conversation").scrollTop = $("conversation").scrollHeight;
}

// One SSE event of the run being shown: its text is added to the last model message.
function onEvent(event) {
  const entry = lastModelMessage();
  const type = event.event_type;
  if (type === "interaction.created") {
    entry.id = event.interaction.id;
    conversation.lastId = entry.id;
    conversation.active = { ...(conversation.active || {}), id: entry.id };
    setStatus(event.interaction.status, entry.id);
  } else if (type === "interaction.status_update") {
    setStatus(event.status, event.interaction_id);
  } else if (type === "step.delta" && event.delta && event.delta.type === "text") {
    entry.text += event.delta.text;
    showText(entry);
  } else if (type === "interaction.completed") {
    setStatus(event.interaction.status, event.interaction.id);
  } else if (type === "error") {
    showError(new Error(`stream error ${event.error.code}: ${event.error.message}`));
  }
  if (event.event_id && conversation.active) conversation.active.lastEventId = event.event_id;
  save();
}

function setBusy(busy, background) {
  $("send").disabled = busy;
  $("cancel").hidden = !(busy && background);
}

// Reads a stream to its end (or until Cancel aborts it), then shows the interaction as stored.
async function run(start, background) {
  controller = new AbortController();
  setBusy(true, background);
  try {
    await start(controller.signal);
  } catch (error) {
    showError(error);
  } finally {
    controller = null;
    if (!leaving) {
      await settle();
      setBusy(false, false);
    }
  }
}

async function settle() {
  const id = conversation.active && conversation.active.id;
  conversation.active = null;
  if (!id) {
    // refused before it started (the error says why): the turn goes back to the prompt, to retry
    const [turn] = conversation.messages.splice(-2, 2);
    if (turn) $("prompt").value = turn.text;
    save();
    renderMessages();
    return;
  }
  save();
  try {
    const interaction = await api.get(id);
    setStatus(interaction.status, id);
    const entry = conversation.messages.find((m) => m.id === id);
    // what a cancelled run kept is what the record holds: shown from it, not from the events cut short
    if (entry && interaction.status !== "completed" && interaction.status !== "requires_action") {
      entry.text = outputText(interaction);
      entry.status = interaction.status;
      save();
      renderMessages();
    }
  } catch (error) {
    showError(error);
  }
  await refreshChain();
}

function turnBody(text) {
  const body = { model: $("model").value, input: text };
  if (conversation.lastId) body.previous_interaction_id = conversation.lastId;
  const user = $("label-user").value.trim();
  if (user) body.labels = { user };
  return body;
}

async function send(event) {
  event.preventDefault();
  clearError();
  const text = $("prompt").value.trim();
  if (!text || controller) return;
  if (!api.keyOf()) return showError(new Error("Enter an API key first."));
  const body = turnBody(text);
  const background = $("background").checked;
  conversation.messages.push({ role: "user", text }, { role: "model", text: "", id: null });
  conversation.active = { id: null, lastEventId: null, background };
  $("prompt").value = "";
  renderMessages();
  if (background) {
    await run(async (signal) => {
      const created = await api.create({ ...body, background: true });
      onEvent({ event_type: "interaction.created", interaction: created });
      await api.follow(created.id, null, onEvent, signal);
    }, true);
  } else {
    await run((signal) => api.stream("POST", "/interactions", { ...body, stream: true }, onEvent, signal), false);
  }
}

async function cancel() {
  const id = conversation.active && conversation.active.id;
  if (!id) return;
  $("cancel").disabled = true;
  try {
    await api.cancel(id);
  } catch (error) {
    showError(error);
  } finally {
    $("cancel").disabled = false;
    if (controller) controller.abort();
  }
}

// Every interaction of the conversation, from its last one back along previous_interaction_id.
async function chainOf(lastId) {
  const chain = [];
  let id = lastId;
  while (id && chain.length < 100) {
    const interaction = await api.get(id);
    chain.push(interaction);
    id = interaction.previous_interaction_id;
  }
  return chain;
}

async function refreshChain() {
  if (!conversation.lastId || !api.keyOf()) {
    $("chain").replaceChildren();
    return;
  }
  try {
    const chain = await chainOf(conversation.lastId);
    $("chain").replaceChildren(...chain.map(chainCard));
  } catch (error) {
    showError(error);
  }
}

function newConversation() {
  if (controller) controller.abort();
  conversation = { messages: [], lastId: null, active: null };
  save();
  renderMessages();
  setStatus("");
  refreshChain();
}

// A listed interaction's conversation, rebuilt from its chain, becomes the one shown (and continued).
async function openConversation(id) {
  if (controller) return;
  clearError();
  try {
    const chain = await chainOf(id);
    const messages = [];
    for (const interaction of chain.reverse()) {
      const input = (interaction.steps || []).filter((s) => s.type === "user_input");
      const said = input.flatMap((s) => s.content || []).filter((c) => c.type === "text");
      messages.push({ role: "user", text: said.map((c) => c.text).join("") });
      messages.push({ role: "model", text: outputText(interaction), id: interaction.id });
    }
    conversation = { messages, lastId: id, active: null };
    save();
    renderMessages();
    setStatus(chain[0].status, id);
    await refreshChain();
  } catch (error) {
    showError(error);
  }
}

function listParams() {
  const params = new URLSearchParams({ page_size: $("page-size").value });
  const label = $("filter-label").value.trim();
  if (label) {
    const at = label.indexOf("=");
    if (at < 1) throw new Error("A label filter is key=value.");
    params.set(`labels.${label.slice(0, at).trim()}`, label.slice(at + 1).trim());
  }
  if ($("filter-status").value) params.set("status", $("filter-status").value);
  if ($("filter-model").value.trim()) params.set("model", $("filter-model").value.trim());
  if ($("filter-roots").checked) params.set("roots_only", "true");
  return params;
}

async function listPage(more) {
  clearError();
  try {
    const params = listParams();
    if (more && listToken) params.set("page_token", listToken);
    const page = await api.list(params);
    const rows = (page.interactions || []).map((each) => listRow(each, openConversation));
    if (more) $("list-results").append(...rows);
    else $("list-results").replaceChildren(...rows);
    listToken = page.next_page_token || null;
    $("list-more").hidden = !listToken;
  } catch (error) {
    showError(error);
  }
}

async function loadModels() {
  if (!api.keyOf()) return;
  const select = $("model");
  const wanted = select.value || localStorage.getItem(MODEL) || "echo";
  try {
    const names = [];
    let token = null;
    do {
      const page = await api.models(token);
      names.push(...(page.models || []).map((m) => m.name.replace(/^models\//, "")));
      token = page.nextPageToken;
    } while (token && names.length < 1000);
    select.replaceChildren(...names.map((name) => new Option(name, name)));
    select.value = names.includes(wanted) ? wanted : names[0];
  } catch (error) {
    showError(error);
  }
}

// A run still streaming when the page went away goes on from the last event it showed.
function resume() {
  const active = conversation.active;
  if (!active || !active.id) return;
  setStatus("resuming", active.id);
  run((signal) => api.follow(active.id, active.lastEventId, onEvent, signal), Boolean(active.background));
}

function wire() {
  window.addEventListener("pagehide", () => {
    leaving = true;
  });
  $("api-key").value = localStorage.getItem(KEY) || "";
  $("api-key").addEventListener("input", () => localStorage.setItem(KEY, $("api-key").value.trim()));
  $("api-key").addEventListener("change", () => {
    loadModels();
    refreshChain();
  });
  $("model").addEventListener("change", () => localStorage.setItem(MODEL, $("model").value));
  $("reload-models").addEventListener("click", loadModels);
  $("chat-form").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-form").requestSubmit();
  });
  $("cancel").addEventListener("click", cancel);
  $("new-chat").addEventListener("click", newConversation);
  $("chain-refresh").addEventListener("click", refreshChain);
  $("list-form").addEventListener("submit", (event) => {
    event.preventDefault();
    listPage(false);
  });
  $("list-more").addEventListener("click", () => listPage(true));
  $("error-close").addEventListener("click", clearError);
}

async function main() {
  wire();
  renderMessages();
  await loadModels();
  if (conversation.active) resume();
  else refreshChain();
  document.body.dataset.ready = "true";
}

main();
