// The signed-in user's batches (GET /v1/batches, the key as a Bearer token), newest first, with a cancel for
// those still running (POST /v1/batches/{id}/cancel).
import { $, api, attempt, el, table, when } from "./core.js";

const PAGE = 20;
const RUNNING = new Set(["validating", "in_progress", "finalizing"]);

export async function loadBatches() {
  const line = $("batches-line");
  let page;
  try {
    page = await api("/v1/batches?limit=" + PAGE);
  } catch (error) {
    $("batches").replaceChildren(el("p", { class: "error", text: "Your batches could not be read: " + error.message }));
    throw error;
  }
  const rows = page.data.map((batch) => {
    const counts = batch.request_counts || { total: 0, completed: 0, failed: 0 };
    const cancel = RUNNING.has(batch.status)
      ? el("button", { type: "button", class: "secondary", text: "Cancel", "aria-label": "Cancel batch " + batch.id,
        onclick: () => attempt(line, async () => {
          await api("/v1/batches/" + batch.id + "/cancel", { method: "POST" });
          await loadBatches();
        }, "Cancelling " + batch.id + ": the lines already running finish.") })
      : "";
    return [el("code", { text: batch.id }), el("span", { class: "batch-status", text: batch.status }),
      counts.completed + " done, " + counts.failed + " failed of " + counts.total, when(batch.created_at), cancel];
  });
  $("batches").replaceChildren(table(["Batch", "Status", "Requests", "Created", ""], rows,
    { id: "batches-table", empty: "No batch yet (the Batch API: /v1/batches)." }));
}
