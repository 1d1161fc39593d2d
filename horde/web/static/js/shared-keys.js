// Shared keys (the AI Horde's /api/v2/sharedkeys): lend kudos under limits. Listed from the user's own details
// (`sharedkey_ids`, then each key), made with POST, changed with PATCH, deleted with DELETE.
import { $, api, attempt, confirmAction, el, kudos, refreshUser, say, secretBox, table } from "./core.js";

// The AI Horde's "no limit".
const UNLIMITED = -1;
const editing = { id: null };

export async function loadSharedKeys(user) {
  const ids = user.sharedkey_ids || [];
  const keys = await Promise.all(ids.map((id) => api("/api/v2/sharedkeys/" + id)));
  const line = $("sharedkeys-line");
  const rows = keys.map((key) => [
    key.name || "",
    el("div", { class: "row" }, el("code", { class: "key-id", text: key.id }), copyButton(key)),
    limit(key.kudos, kudos), kudos(key.utilized), key.expiry || "never", limit(key.max_text_tokens, String),
    el("div", { class: "row" },
      el("button", { type: "button", class: "secondary", text: "Edit", "aria-label": "Edit shared key " + (key.name || key.id),
        onclick: () => startEdit(key) }),
      el("button", { type: "button", class: "danger", text: "Delete", "aria-label": "Delete shared key " + (key.name || key.id),
        onclick: () => remove(key, line) })),
  ]);
  $("sharedkeys").replaceChildren(table(["Name", "Key", "Kudos limit", "Used", "Expires", "Max tokens", ""], rows,
    { id: "sharedkeys-table", empty: "No shared key yet." }));
}

function limit(value, format) { return value === UNLIMITED ? "no limit" : format(value); }

function copyButton(key) {
  return el("button", { type: "button", class: "secondary", text: "Copy", "aria-label": "Copy shared key " + (key.name || key.id),
    onclick: (event) => navigator.clipboard.writeText(key.id).then(() => { event.target.textContent = "Copied"; },
      () => { event.target.textContent = "Select it to copy"; }) });
}

// A field left empty is no limit (-1).
function number(id) {
  const text = $(id).value.trim();
  return text === "" ? UNLIMITED : Number(text);
}

// While a key is edited, an empty expiry leaves its expiry as it is (the form cannot show the days left).
function formBody() {
  const body = { kudos: number("sharedkey-kudos"), max_text_tokens: number("sharedkey-tokens") };
  if (!editing.id || $("sharedkey-expiry").value.trim() !== "") body.expiry = number("sharedkey-expiry");
  const name = $("sharedkey-name").value.trim();
  if (name) body.name = name;
  return body;
}

async function submit(event) {
  event.preventDefault();
  const result = $("sharedkey-result");
  result.replaceChildren();
  await attempt($("sharedkeys-line"), async () => {
    if (editing.id) {
      await api("/api/v2/sharedkeys/" + editing.id, { method: "PATCH", body: formBody() });
      say($("sharedkeys-line"), "Saved.");
    } else {
      const made = await api("/api/v2/sharedkeys", { method: "POST", body: formBody() });
      result.append(secretBox("The new shared key", made.id,
        "Whoever holds it spends your kudos within its limits. You can copy it again from the list."));
    }
    stopEdit();
    await loadSharedKeys(await refreshUser());
  });
}

function startEdit(key) {
  editing.id = key.id;
  $("sharedkey-name").value = key.name || "";
  $("sharedkey-kudos").value = key.kudos === UNLIMITED ? "" : key.kudos;
  $("sharedkey-expiry").value = "";
  $("sharedkey-expiry").placeholder = "unchanged";
  $("sharedkey-tokens").value = key.max_text_tokens === UNLIMITED ? "" : key.max_text_tokens;
  $("sharedkey-submit").textContent = "Save changes";
  $("sharedkey-cancel").hidden = false;
  $("sharedkey-legend").textContent = "Change the shared key " + (key.name || key.id);
  $("sharedkey-name").focus();
}

function stopEdit() {
  editing.id = null;
  $("sharedkey-form").reset();
  $("sharedkey-expiry").placeholder = "";
  $("sharedkey-submit").textContent = "Create";
  $("sharedkey-cancel").hidden = true;
  $("sharedkey-legend").textContent = "A new shared key";
}

async function remove(key, line) {
  if (!(await confirmAction("Delete the shared key " + (key.name || key.id) + "? Whoever holds it can no longer use it."))) return;
  await attempt(line, async () => {
    await api("/api/v2/sharedkeys/" + key.id, { method: "DELETE" });
    await loadSharedKeys(await refreshUser());
  }, "Deleted.");
}

export function setupSharedKeys() {
  $("sharedkey-form").addEventListener("submit", submit);
  $("sharedkey-cancel").addEventListener("click", stopEdit);
}
