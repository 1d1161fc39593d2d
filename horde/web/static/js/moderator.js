// The Moderator view (moderators and admins; the Horde refuses the rest whatever the page shows): find and change
// a user, delete one, pause or delete workers, IP timeouts, the Horde's modes and the audit trail.
// docs/reference/moderation.md has every field; a refusal (NotAdmin for an admin's field) is shown as it comes.
import { $, allWorkers, api, attempt, confirmAction, el, kudos, say, session, table, userId, when } from "./core.js";

const AUDIT_PAGE = 25;
const audit = { before: null };
const found = { user: null };

export async function loadModerator() {
  const allowed = Boolean(session.user && session.user.moderator);
  $("moderator-refused").hidden = allowed;
  $("moderator-body").hidden = !allowed;
  if (!allowed) return;
  await Promise.all([loadModWorkers(), loadTimeouts(), loadModes(), loadAudit(true)]
    .map((part) => part.catch((error) => console.warn(error))));
}

// ---- a user ----

async function findUser(event) {
  event.preventDefault();
  const text = $("mod-find").value.trim();
  await attempt($("mod-user-line"), async () => {
    const id = userId(text);
    if (id === null) throw new Error("Write the user as name#id, or its id.");
    showUser(await api("/api/v2/users/" + id));
  });
}

function showUser(user) {
  found.user = user;
  const form = $("mod-user-form");
  form.hidden = false;
  $("mod-user-title").textContent = user.username + (user.deleted ? " (deleted)" : "");
  $("mod-user-facts").textContent = kudos(user.kudos) + " kudos · " + user.worker_count + " workers · concurrency "
    + user.concurrency + (user.moderator ? " · moderator" : "") + (user.trusted ? " · trusted" : "") + (user.flagged ? " · flagged" : "");
  $("mod-trusted").checked = user.trusted;
  $("mod-flagged").checked = user.flagged;
  $("mod-moderator").checked = user.moderator;
  $("mod-concurrency").value = user.concurrency;
  $("mod-multiplier").value = "";
  $("mod-kudos").value = "";
  $("mod-reason").value = "";
}

// Only what the moderator changed is sent: an admin's field left alone is not refused to a moderator.
function changes() {
  const user = found.user;
  const body = {};
  if ($("mod-trusted").checked !== user.trusted) body.trusted = $("mod-trusted").checked;
  if ($("mod-flagged").checked !== user.flagged) body.flagged = $("mod-flagged").checked;
  if ($("mod-moderator").checked !== user.moderator) body.moderator = $("mod-moderator").checked;
  const concurrency = $("mod-concurrency").value.trim();
  if (concurrency && Number(concurrency) !== user.concurrency) body.concurrency = Number(concurrency);
  if ($("mod-multiplier").value.trim()) body.usage_multiplier = Number($("mod-multiplier").value);
  if ($("mod-kudos").value.trim()) body.kudos = Number($("mod-kudos").value);
  const reason = $("mod-reason").value.trim();
  if (reason) body.reason = reason;
  return body;
}

async function changeUser(event) {
  event.preventDefault();
  await attempt($("mod-user-line"), async () => {
    const body = changes();
    if (Object.keys(body).every((name) => name === "reason")) throw new Error("Nothing changed.");
    await api("/api/v2/users/" + found.user.id, { method: "PUT", body });
    showUser(await api("/api/v2/users/" + found.user.id));
    say($("mod-user-line"), "Saved " + found.user.username + ".");
    await loadAudit(true);
  });
}

async function deleteUser() {
  const user = found.user;
  if (!(await confirmAction("Delete " + user.username + "? Its requests are cancelled, its workers and shared keys deleted; there is no undelete."))) return;
  const reason = $("mod-reason").value.trim();
  await attempt($("mod-user-line"), async () => {
    await api("/api/v2/users/" + user.id + (reason ? "?reason=" + encodeURIComponent(reason) : ""), { method: "DELETE" });
    $("mod-user-form").hidden = true;
    await loadAudit(true);
  }, "Deleted " + user.username + ".");
}

// ---- workers ----

async function loadModWorkers() {
  const line = $("mod-workers-line");
  const rows = (await allWorkers()).map((worker) => [
    el("strong", { text: worker.name }), worker.owner || "", worker.ipaddr || "", worker.models.join(", "),
    worker.paused ? "paused" : worker.online ? "online" : "offline",
    el("div", { class: "row" },
      el("button", { type: "button", class: "secondary", text: worker.paused ? "Unpause" : "Pause",
        "aria-label": (worker.paused ? "Unpause " : "Pause ") + worker.name,
        onclick: () => attempt(line, async () => {
          await api("/api/v2/workers/" + worker.id, { method: "PUT", body: { paused: !worker.paused } });
          await Promise.all([loadModWorkers(), loadAudit(true)]);
        }) }),
      el("button", { type: "button", class: "danger", text: "Delete", "aria-label": "Delete " + worker.name,
        onclick: async () => {
          if (!(await confirmAction("Delete the worker " + worker.name + "?"))) return;
          await attempt(line, async () => {
            await api("/api/v2/workers/" + worker.id, { method: "DELETE" });
            await Promise.all([loadModWorkers(), loadAudit(true)]);
          });
        } })),
  ]);
  $("mod-workers").replaceChildren(table(["Worker", "Owner", "Address", "Models", "State", ""], rows,
    { id: "mod-workers-table", empty: "No worker." }));
}

// ---- IP timeouts ----

async function loadTimeouts() {
  const timeouts = await api("/api/v2/operations/ipaddr");
  const line = $("mod-timeouts-line");
  const rows = timeouts.map((timeout) => [el("code", { text: timeout.ipaddr }), "ends in " + Math.ceil(timeout.seconds / 60) + " min",
    el("button", { type: "button", class: "secondary", text: "Lift", "aria-label": "Lift the timeout of " + timeout.ipaddr,
      onclick: () => attempt(line, async () => {
        await api("/api/v2/operations/ipaddr", { method: "DELETE", body: { ipaddr: timeout.ipaddr } });
        await Promise.all([loadTimeouts(), loadAudit(true)]);
      }) })]);
  $("mod-timeouts").replaceChildren(table(["Address", "Time left", ""], rows, { id: "mod-timeouts-table", empty: "No address is in timeout." }));
}

async function addTimeout(event) {
  event.preventDefault();
  const body = { ipaddr: $("mod-ipaddr").value.trim(), hours: Number($("mod-hours").value) };
  const reason = $("mod-ip-reason").value.trim();
  if (reason) body.reason = reason;
  await attempt($("mod-timeouts-line"), async () => {
    await api("/api/v2/operations/ipaddr", { method: "POST", body });
    $("mod-timeout-form").reset();
    await Promise.all([loadTimeouts(), loadAudit(true)]);
  }, body.ipaddr + " is in timeout.");
}

// ---- modes ----

const MODES = ["maintenance_mode", "invite_only_mode", "raid_mode"];

async function loadModes() {
  const modes = await api("/api/v2/status/modes");
  for (const mode of MODES) $("mod-" + mode).checked = Boolean(modes[mode]);
}

async function saveModes(event) {
  event.preventDefault();
  const body = Object.fromEntries(MODES.map((mode) => [mode, $("mod-" + mode).checked]));
  await attempt($("mod-modes-line"), async () => {
    await api("/api/v2/status/modes", { method: "PUT", body });
    await Promise.all([loadModes(), loadAudit(true)]);
  }, "Modes saved.");
}

// ---- the audit trail ----

function change(entry) {
  const after = entry.after || {};
  const before = entry.before || {};
  return Object.keys(after).map((name) => name + ": " + JSON.stringify(before[name]) + " → " + JSON.stringify(after[name])).join(", ");
}

async function loadAudit(fromStart) {
  if (fromStart) audit.before = null;
  const query = new URLSearchParams({ limit: String(AUDIT_PAGE) });
  if (audit.before) query.set("before", String(audit.before));
  const page = await api("/api/v2/operations/audit?" + query);
  const rows = page.entries.map((entry) => [when(entry.at), entry.actor, entry.action, entry.target_kind + " " + entry.target,
    change(entry), entry.reason || ""]);
  const built = table(["When", "Who", "Action", "Target", "Change", "Reason"], rows, { id: "audit-table", empty: "No record yet." });
  if (fromStart) $("mod-audit").replaceChildren(built);
  else $("mod-audit").querySelector("tbody").append(...built.querySelectorAll("tbody tr"));
  audit.before = page.next_before;
  $("audit-older").hidden = !page.next_before;
}

export function setupModerator() {
  $("mod-find-form").addEventListener("submit", findUser);
  $("mod-user-form").addEventListener("submit", changeUser);
  $("mod-delete-user").addEventListener("click", deleteUser);
  $("mod-timeout-form").addEventListener("submit", addTimeout);
  $("mod-modes-form").addEventListener("submit", saveModes);
  $("audit-older").addEventListener("click", () => loadAudit(false).catch((error) => say($("mod-audit-line"), error.message, true)));
}
