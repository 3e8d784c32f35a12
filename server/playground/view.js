// Building the page's pieces. Everything from the API is inserted as text, never as HTML.

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

export function $(id) {
  return document.getElementById(id);
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleTimeString();
}

export function tokens(usage) {
  if (!usage) return "";
  const input = usage.total_input_tokens ?? 0;
  const output = usage.total_output_tokens ?? 0;
  return `${input} in · ${output} out`;
}

// The text of an interaction's output steps (model_output after the last user_input), as the SDK's
// output_text reads it.
export function outputText(interaction) {
  const steps = interaction.steps || [];
  let text = "";
  for (const step of steps) {
    if (step.type === "user_input") text = "";
    if (step.type !== "model_output") continue;
    for (const part of step.content || []) {
      if (part.type === "text") text += part.text;
    }
  }
  return text;
}

export function statusBadge(status) {
  return el("span", { class: `badge ${status || ""}`, "data-testid": "status", text: status || "?" });
}

export function message(role, text, id, status) {
  const who = role === "user" ? "you" : "model";
  return el(
    "div",
    { class: `msg ${role}`, "data-testid": `msg-${role}`, "data-id": id },
    el("div", { class: "who", text: status ? `${who} · ${status}, partial output` : who }),
    el("div", { class: "text", text }),
  );
}

export function chainCard(interaction) {
  return el(
    "li",
    { class: "card", "data-testid": "chain-item", "data-id": interaction.id },
    el("div", { class: "row" }, el("code", { text: interaction.id }), statusBadge(interaction.status)),
    el("div", { class: "meta", text: `${interaction.model || interaction.agent || ""} · ${tokens(interaction.usage)}` }),
    el("div", { class: "meta", text: `created ${when(interaction.created)} · updated ${when(interaction.updated)}` }),
  );
}

export function listRow(interaction, onOpen) {
  const labels = Object.entries(interaction.labels || {})
    .map(([key, value]) => `${key}=${value}`)
    .join(", ");
  const link = el("a", { href: "#", text: interaction.id });
  link.addEventListener("click", (event) => {
    event.preventDefault();
    onOpen(interaction.id);
  });
  return el(
    "tr",
    { "data-testid": "list-item", "data-id": interaction.id },
    el("td", {}, link),
    el("td", {}, statusBadge(interaction.status)),
    el("td", { text: interaction.model || interaction.agent || "" }),
    el("td", { text: labels }),
    el("td", { text: tokens(interaction.usage) }),
    el("td", { text: when(interaction.created) }),
  );
}
