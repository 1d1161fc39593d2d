// The Models view: a card per model with an online worker, from /v1/models, with a filter.
import { $, api, el } from "./core.js";

export const models = { list: [] };
const changeListeners = [];

export function onModels(listener) { changeListeners.push(listener); }

export async function loadModels() {
  const body = await api("/v1/models");
  models.list = body.data;
  renderModels();
  for (const listener of changeListeners) listener(models.list);
}

function matches(card, filter) {
  if (!filter) return true;
  const words = [card.id, ...card.supported_parameters, ...card.x_horde.features, ...card.x_horde.guarantees];
  return words.some((word) => word.toLowerCase().includes(filter));
}

export function renderModels() {
  const filter = $("model-filter").value.trim().toLowerCase();
  const shown = models.list.filter((card) => matches(card, filter));
  const container = $("model-cards");
  container.replaceChildren();
  $("model-count").textContent = shown.length + " of " + models.list.length + " models";
  if (!models.list.length) container.append(el("p", { class: "empty", text: "No model is served right now: no worker is online." }));
  for (const card of shown) container.append(modelCard(card));
}

function modelCard(card) {
  const horde = card.x_horde;
  const facts = [
    ["Workers", horde.workers + " (" + horde.threads + " threads)"],
    ["Context", card.context_length + " tokens"],
    ["Output", card.top_provider.max_completion_tokens + " tokens"],
    ["Queue", horde.queued + " waiting, about " + horde.estimated_wait + " s"],
  ];
  const list = el("dl");
  for (const [name, value] of facts) list.append(el("dt", { text: name }), el("dd", { text: value }));
  const tags = el("div", { class: "tags" });
  for (const name of card.supported_parameters) tags.append(el("span", { class: "tag", text: name }));
  return el("article", { class: "card model-card", "data-model": card.id }, el("h2", { text: card.id }), list, tags);
}

export function setupModels() {
  $("model-filter").addEventListener("input", renderModels);
}
