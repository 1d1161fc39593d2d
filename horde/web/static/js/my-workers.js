// The signed-in user's workers (GET /api/v2/users/{id}/workers): their state, maintenance with its message
// (PUT /api/v2/workers/{id}) and deletion (DELETE, after a confirmation).
import { $, api, attempt, confirmAction, el, kudos, table } from "./core.js";

export async function loadMyWorkers(userId) {
  const line = $("workers-line");
  let workers;
  try {
    workers = await api("/api/v2/users/" + userId + "/workers");
  } catch (error) {
    $("my-workers").replaceChildren(el("p", { class: "error", text: "Your workers could not be read: " + error.message }));
    throw error;
  }
  const rows = workers.map((worker) => [
    el("strong", { text: worker.name }),
    el("span", { class: worker.online ? "online" : "offline", text: worker.online ? "online" : "offline" }),
    worker.models.join(", "),
    worker.speed,
    String(worker.jobs),
    kudos(worker.kudos_earned),
    maintenanceControl(worker, line, userId),
    el("button", { type: "button", class: "danger", text: "Delete", "aria-label": "Delete worker " + worker.name,
      onclick: () => deleteWorker(worker, line, userId) }),
  ]);
  $("my-workers").replaceChildren(table(["Name", "State", "Models", "Speed", "Jobs", "Kudos earned", "Maintenance", ""],
    rows, { id: "my-workers-table", empty: "You run no worker. Start one with your key: python -m horde worker …" }));
}

function maintenanceControl(worker, line, userId) {
  const box = el("input", { type: "checkbox", checked: worker.maintenance_mode, class: "maintenance-toggle",
    "aria-label": "Maintenance for " + worker.name });
  const message = el("input", { type: "text", maxlength: "1000", class: "maintenance-msg", value: worker.maintenance_msg || "",
    placeholder: "Message to its users (optional)", "aria-label": "Maintenance message for " + worker.name });
  const save = el("button", { type: "button", class: "secondary", text: "Save", "aria-label": "Save maintenance of " + worker.name,
    onclick: () => attempt(line, async () => {
      const body = { maintenance: box.checked };
      if (box.checked && message.value.trim()) body.maintenance_msg = message.value.trim();
      await api("/api/v2/workers/" + worker.id, { method: "PUT", body });
      await loadMyWorkers(userId);
    }, worker.name + (box.checked ? " is in maintenance: it takes no new job." : " takes jobs again.")) });
  return el("div", { class: "row maintenance", "data-worker": worker.name }, el("label", {}, box, " in maintenance"), message, save);
}

async function deleteWorker(worker, line, userId) {
  if (!(await confirmAction("Delete the worker " + worker.name + "? Its running jobs end unrewarded; it cannot be undone."))) return;
  await attempt(line, async () => {
    await api("/api/v2/workers/" + worker.id, { method: "DELETE" });
    await loadMyWorkers(userId);
  }, "Deleted " + worker.name + ".");
}
