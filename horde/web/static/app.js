// The Horde's page: models, a playground and the status, through the public API only.
"use strict";

const KEY_STORAGE = "horde.apiKey";
const REFRESH_MS = 10000;
const $ = (id) => document.getElementById(id);

const state = { models: [], conversation: [], controller: null, timer: null };

function apiKey() { return localStorage.getItem(KEY_STORAGE) || ""; }

function openaiHeaders() {
  const headers = { "Content-Type": "application/json", "X-Title": "horde-web" };
  if (apiKey()) headers["Authorization"] = "Bearer " + apiKey();
  return headers;
}

function nativeHeaders() {
  const headers = { "Client-Agent": "horde-web:1:horde" };
  if (apiKey()) headers["apikey"] = apiKey();
  return headers;
}

async function getJson(path, headers) {
  const response = await fetch(path, { headers });
  const body = await response.json();
  if (!response.ok) throw new Error(errorMessage(body, response.status));
  return body;
}

function errorMessage(body, status) {
  if (body && body.error) return body.error.message + (body.error.code ? " (" + body.error.code + ")" : "");
  if (body && body.message) return body.message + (body.rc ? " (" + body.rc + ")" : "");
  return "HTTP " + status;
}

function showError(error) {
  const element = $("error");
  element.textContent = error ? String(error.message || error) : "";
  element.hidden = !error;
}

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "text") node.textContent = value; else node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

// ---- account ----

async function refreshKudos() {
  try {
    const user = await getJson("/api/v2/find_user", nativeHeaders());
    $("kudos").textContent = user.username + " · " + user.kudos + " kudos";
  } catch (error) {
    $("kudos").textContent = error.message;
  }
}

// ---- models ----

async function loadModels() {
  const body = await getJson("/v1/models", openaiHeaders());
  state.models = body.data;
  renderModels();
  fillModelSelect();
}

function matches(card, filter) {
  if (!filter) return true;
  const words = [card.id, ...card.supported_parameters, ...card.x_horde.features, ...card.x_horde.guarantees];
  return words.some((word) => word.toLowerCase().includes(filter));
}

function renderModels() {
  const filter = $("model-filter").value.trim().toLowerCase();
  const shown = state.models.filter((card) => matches(card, filter));
  const container = $("model-cards");
  container.replaceChildren();
  $("model-count").textContent = shown.length + " of " + state.models.length + " models";
  if (!state.models.length) container.append(el("p", { class: "empty", text: "No model is served right now: no worker is online." }));
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

function fillModelSelect() {
  const select = $("chat-model");
  const chosen = select.value;
  select.replaceChildren(...state.models.map((card) => el("option", { value: card.id, text: card.id })));
  if (chosen && state.models.some((card) => card.id === chosen)) select.value = chosen;
}

// ---- status ----

async function loadStatus() {
  const [models, totals] = await Promise.all([
    getJson("/api/v2/status/models?type=chat", nativeHeaders()),
    getJson("/api/v2/stats/chat/totals", nativeHeaders()),
  ]);
  const workers = new Set(models.flatMap((model) => model.worker_ids)).size;
  const queued = models.reduce((sum, model) => sum + model.queued, 0);
  const tiles = [
    [workers, "workers online"], [queued, "requests queued"],
    [totals.hour.requests, "requests served, last hour"], [totals.hour.tokens, "tokens served, last hour"],
    [totals.total.requests, "requests served in all"], [totals.total.tokens, "tokens served in all"],
  ];
  $("totals").replaceChildren(...tiles.map(([value, label]) => el("div", { class: "tile" }, el("b", { text: String(value) }), el("span", { text: label }))));
  const rows = models.map((model) => el("tr", {},
    el("td", { text: model.name }), el("td", { text: String(model.workers) }), el("td", { text: String(model.threads) }),
    el("td", { text: String(model.queued) }), el("td", { text: model.estimated_wait + " s" })));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "5", class: "empty", text: "No worker is online." })));
  document.querySelector("#status-table tbody").replaceChildren(...rows);
}

// ---- playground ----

function addMessage(role, text) {
  const content = el("div", { class: "content", text: text || "" });
  const node = el("div", { class: "message " + role }, el("div", { class: "role", text: role }), content);
  $("chat-messages").append(node);
  return node;
}

function assistantView(node) {
  const reasoning = el("details", { class: "reasoning", open: "" }, el("summary", { text: "Reasoning" }));
  const reasoningText = el("span");
  reasoning.append(reasoningText);
  reasoning.hidden = true;
  node.insertBefore(reasoning, node.querySelector(".content"));
  return {
    node, content: node.querySelector(".content"), reasoning, reasoningText, tools: null,
    text: "", reasoningSoFar: "", toolCalls: [],
  };
}

function requestBody() {
  const messages = [];
  const system = $("chat-system").value.trim();
  if (system) messages.push({ role: "system", content: system });
  messages.push(...state.conversation);
  return {
    model: $("chat-model").value, messages, stream: true, stream_options: { include_usage: true },
    max_tokens: Number($("chat-max-tokens").value), temperature: Number($("chat-temperature").value),
  };
}

async function send(event) {
  event.preventDefault();
  const text = $("chat-input").value.trim();
  if (!text || state.controller) return;
  if (!$("chat-model").value) { showError(new Error("No model to send to: no worker is online.")); return; }
  showError(null);
  state.conversation.push({ role: "user", content: text });
  addMessage("user", text);
  $("chat-input").value = "";
  const view = assistantView(addMessage("assistant", ""));
  state.controller = new AbortController();
  setBusy(true);
  setStatus("Sending…");
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST", headers: openaiHeaders(), body: JSON.stringify(requestBody()), signal: state.controller.signal,
    });
    if (!response.ok) throw new Error(errorMessage(await response.json(), response.status));
    await readStream(response.body.getReader(), view);
    state.conversation.push(assistantTurn(view));
  } catch (error) {
    state.conversation.pop();
    view.node.classList.add("error");
    view.content.textContent = error.name === "AbortError" ? "Stopped: the request was cancelled." : String(error.message);
    setStatus("");
  } finally {
    state.controller = null;
    setBusy(false);
    refreshKudos();
  }
}

function assistantTurn(view) {
  const turn = { role: "assistant", content: view.text };
  if (view.toolCalls.length) turn.tool_calls = view.toolCalls;
  return turn;
}

async function readStream(reader, view) {
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (handleEvent(block, view)) return;
    }
  }
  throw new Error("The stream ended early.");
}

// One SSE event; true at [DONE].
function handleEvent(block, view) {
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) {
      const queue = /queue_position=(\d+) wait_time=(\d+)/.exec(line);
      if (queue && !view.text) setStatus("Queued: position " + queue[1] + ", about " + queue[2] + " s to wait.");
    } else if (line.startsWith("data: ")) {
      const data = line.slice(6);
      if (data === "[DONE]") return true;
      handleChunk(JSON.parse(data), view);
    }
  }
  return false;
}

function handleChunk(chunk, view) {
  if (chunk.error) throw new Error(errorMessage(chunk, 500));
  const choice = chunk.choices && chunk.choices[0];
  if (choice) {
    const delta = choice.delta || {};
    if (delta.reasoning_content) {
      view.reasoningSoFar += delta.reasoning_content;
      view.reasoningText.textContent = view.reasoningSoFar;
      view.reasoning.hidden = false;
      setStatus("Reasoning…");
    }
    if (delta.content) {
      view.text += delta.content;
      view.content.textContent = view.text;
      setStatus("Generating…");
    }
    if (delta.tool_calls) showToolCalls(delta.tool_calls, view);
  }
  const horde = chunk.x_horde;
  if (horde) {
    view.node.append(el("div", { class: "meta", text: "kudos " + horde.kudos + " · worker " + horde.worker_name + " · " + horde.model }));
    setStatus("Done.");
  }
}

function showToolCalls(calls, view) {
  view.toolCalls.push(...calls.map(({ index, ...call }) => call));
  if (!view.tools) {
    view.tools = el("pre", { class: "tool-calls" });
    view.node.append(view.tools);
  }
  view.tools.textContent = view.toolCalls.map((call) => call.function.name + "(" + call.function.arguments + ")").join("\n");
}

function setBusy(busy) {
  $("chat-send").disabled = busy;
  $("chat-stop").disabled = !busy;
}

function setStatus(text) { $("chat-status").textContent = text; }

function stop() {
  if (state.controller) state.controller.abort();
}

function clearConversation() {
  stop();
  state.conversation = [];
  $("chat-messages").replaceChildren();
  setStatus("");
}

// ---- views ----

const LOADERS = { models: loadModels, playground: loadModels, status: loadStatus };

function currentView() {
  const name = location.hash.slice(1);
  return name in LOADERS ? name : "models";
}

async function show() {
  const name = currentView();
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + name;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.view === name);
  await refresh();
}

async function refresh() {
  try {
    await LOADERS[currentView()]();
    if (!state.controller) showError(null);
  } catch (error) {
    showError(error);
  }
}

function start() {
  $("api-key").value = apiKey();
  $("api-key").addEventListener("change", () => {
    localStorage.setItem(KEY_STORAGE, $("api-key").value.trim());
    refreshKudos();
    refresh();
  });
  $("model-filter").addEventListener("input", renderModels);
  $("chat-input-form").addEventListener("submit", send);
  $("chat-stop").addEventListener("click", stop);
  $("chat-clear").addEventListener("click", clearConversation);
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-input-form").requestSubmit();
  });
  window.addEventListener("hashchange", show);
  state.timer = setInterval(() => { if (currentView() !== "playground") refresh(); }, REFRESH_MS);
  refreshKudos();
  show();
}

start();
