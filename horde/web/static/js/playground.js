// The Playground: a conversation streamed from /v1/chat/completions with the signed-in key (anonymous without).
import { $, el, errorMessage, refreshUser, session, showError } from "./core.js";
import { models, onModels } from "./models.js";

const state = { conversation: [], controller: null };

function headers() {
  const sent = { "Content-Type": "application/json", "X-Title": "horde-web" };
  if (session.key) sent["Authorization"] = "Bearer " + session.key;
  return sent;
}

function fillModelSelect() {
  const select = $("chat-model");
  const chosen = select.value;
  select.replaceChildren(...models.list.map((card) => el("option", { value: card.id, text: card.id })));
  if (chosen && models.list.some((card) => card.id === chosen)) select.value = chosen;
}

function addMessage(role, text) {
  const content = el("div", { class: "content", text: text || "" });
  const node = el("div", { class: "message " + role }, el("div", { class: "role", text: role }), content);
  $("chat-messages").append(node);
  return node;
}

function assistantView(node) {
  const reasoning = el("details", { class: "reasoning", open: true }, el("summary", { text: "Reasoning" }));
  const reasoningText = el("span");
  reasoning.append(reasoningText);
  reasoning.hidden = true;
  node.insertBefore(reasoning, node.querySelector(".content"));
  return { node, content: node.querySelector(".content"), reasoning, reasoningText, tools: null, text: "", reasoningSoFar: "", toolCalls: [] };
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
      method: "POST", headers: headers(), body: JSON.stringify(requestBody()), signal: state.controller.signal,
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
    refreshUser().catch(() => {});
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

function stop() { if (state.controller) state.controller.abort(); }

function clearConversation() {
  stop();
  state.conversation = [];
  $("chat-messages").replaceChildren();
  setStatus("");
}

export function busy() { return state.controller !== null; }

export function setupPlayground() {
  onModels(fillModelSelect);
  $("chat-input-form").addEventListener("submit", send);
  $("chat-stop").addEventListener("click", stop);
  $("chat-clear").addEventListener("click", clearConversation);
  $("chat-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("chat-input-form").requestSubmit();
  });
}
