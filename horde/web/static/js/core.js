// What every view shares: the signed-in key, calls to the API with their errors, and building the DOM.
// The key lives in sessionStorage: it goes when the tab closes, and signing out removes it at once.

const KEY_STORAGE = "horde.apiKey";
const CLIENT_AGENT = "horde-web:2:horde";

export const $ = (id) => document.getElementById(id);

// ---- the signed-in account ----

const listeners = [];
export const session = { key: "", user: null };

export function onSessionChange(listener) { listeners.push(listener); }

function announce() { for (const listener of listeners) listener(session); }

export function storedKey() { return sessionStorage.getItem(KEY_STORAGE) || ""; }

// Sign in with `key`: the user it names (GET /api/v2/find_user), or an Error that says why not.
export async function signIn(key) {
  const user = await api("/api/v2/find_user", { key });
  if (!user.id) throw new Error("That key is the anonymous user's: sign in with your own key.");
  sessionStorage.setItem(KEY_STORAGE, key);
  session.key = key;
  session.user = user;
  announce();
  return user;
}

export function signOut() {
  sessionStorage.removeItem(KEY_STORAGE);
  session.key = "";
  session.user = null;
  announce();
}

// Read the signed-in user again (its balance after a charge, a transfer).
export async function refreshUser() {
  if (!session.key) return null;
  session.user = await api("/api/v2/find_user");
  announce();
  return session.user;
}

// ---- calls ----

export class ApiError extends Error {
  constructor(message, status, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

// The message a refusal carries: the native API's `message` (+ rc), the OpenAI front's `error.message` (+ code).
export function errorMessage(body, status) {
  if (body && body.error && body.error.message) return body.error.message + (body.error.code ? " (" + body.error.code + ")" : "");
  if (body && body.message) return body.message + (body.rc ? " (" + body.rc + ")" : "");
  return "HTTP " + status;
}

// One call with the signed-in key: the native API gets it as `apikey`, /v1 as a Bearer token.
// options: method, body (sent as JSON), key (another key than the session's), headers.
export async function api(path, options = {}) {
  const key = options.key !== undefined ? options.key : session.key;
  const headers = { ...(options.headers || {}) };
  if (path.startsWith("/v1/")) {
    headers["X-Title"] = "horde-web";
    if (key) headers["Authorization"] = "Bearer " + key;
  } else {
    headers["Client-Agent"] = CLIENT_AGENT;
    if (key) headers["apikey"] = key;
  }
  const init = { method: options.method || "GET", headers, credentials: "same-origin" };
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!response.ok) throw new ApiError(errorMessage(body, response.status), response.status, body);
  return body;
}

// Every worker, chat and text (GET /api/v2/workers lists one kind a call), each once.
export async function allWorkers() {
  const lists = await Promise.all(["chat", "text"].map((kind) => api("/api/v2/workers?type=" + kind)));
  const byId = new Map();
  for (const worker of lists.flat()) if (!byId.has(worker.id)) byId.set(worker.id, worker);
  return [...byId.values()];
}

// ---- the DOM ----

export function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

// A table: `columns` are header texts, `rows` arrays of cells (strings or nodes); `attributes.empty`: the text of
// a table without rows.
export function table(columns, rows, { empty = "None.", ...attributes } = {}) {
  const head = el("thead", {}, el("tr", {}, ...columns.map((name) => el("th", { scope: "col", text: name }))));
  // Each cell names its column (data-label): at phone width a row stacks into label: value lines (style.css).
  const body = el("tbody", {}, ...rows.map((row) => el("tr", {}, ...row.map((cell, index) => el("td", { "data-label": columns[index] }, cell)))));
  if (!rows.length) body.append(el("tr", {}, el("td", { colspan: String(columns.length), class: "empty", text: empty })));
  return el("div", { class: "table-wrap" }, el("table", { ...attributes, class: "stacks" }, head, body));
}

// A line in `node` (a status or error element) saying how it went; `error` null clears it.
export function say(node, text, isError = false) {
  node.textContent = text || "";
  node.classList.toggle("error", Boolean(isError));
  node.hidden = !text;
}

export function showError(error) { say($("error"), error ? String(error.message || error) : "", true); }

// Run `action` for a form or a button, saying its refusal in `line`; true when it went through.
export async function attempt(line, action, done) {
  say(line, "");
  try {
    await action();
    if (done) say(line, done);
    return true;
  } catch (error) {
    say(line, String(error.message || error), true);
    return false;
  }
}

// A secret shown this once (a new API key, a shared key's id): the value, a copy button and a warning.
export function secretBox(label, value, warning) {
  const field = el("input", { type: "text", readonly: true, value, class: "secret", "aria-label": label, spellcheck: "false" });
  const copied = el("span", { class: "muted", "aria-live": "polite" });
  const copy = el("button", {
    type: "button", class: "secondary", text: "Copy",
    onclick: async () => {
      field.select();
      try { await navigator.clipboard.writeText(value); copied.textContent = "Copied."; }
      catch { copied.textContent = "Select the key and copy it (the browser refused the clipboard)."; }
    },
  });
  return el("div", { class: "secret-box", role: "group", "aria-label": label },
    el("strong", { text: label }), el("div", { class: "row" }, field, copy, copied),
    warning ? el("p", { class: "warning", text: warning }) : null);
}

// Ask before a change that cannot be undone, in the page's <dialog id="confirm">; resolves true or false.
export function confirmAction(text) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "yes"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

// ---- formats ----

export function kudos(value) { return Number(value || 0).toLocaleString("en"); }

export function when(value) {
  if (value === null || value === undefined || value === "") return "";
  const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
  return isNaN(date) ? String(value) : date.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

export function duration(seconds) {
  const s = Math.max(0, Math.round(Number(seconds) || 0));
  if (s < 120) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  if (s < 172800) return Math.round(s / 3600) + " h";
  return Math.round(s / 86400) + " days";
}

// The number of a user written `name#id`, `#id` or `id`; null when it names none.
export function userId(text) {
  const match = /(?:^|#)\s*(\d+)\s*$/.exec(String(text).trim());
  return match ? Number(match[1]) : null;
}
