// The Status view: the totals now, charts of the last 24 hours by minute (GET /api/v2/stats/series), a row per
// model and the workers (GET /api/v2/workers).
import { $, allWorkers, api, duration, el, kudos, table } from "./core.js";
import { lineChart } from "./charts.js";

const SERIES_MINUTES = 1440;
// The models online now: the picker offers them too, before the sampler has seen them.
let online = [];

export async function loadStatus() {
  await loadTotals();
  await Promise.all([loadSeries(), loadWorkers()]);
}

async function loadTotals() {
  const [models, totals] = await Promise.all([api("/api/v2/status/models?type=chat"), api("/api/v2/stats/chat/totals")]);
  online = models.map((model) => model.name);
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

async function loadSeries() {
  const model = $("series-model").value;
  const query = new URLSearchParams({ minutes: String(SERIES_MINUTES) });
  if (model) query.set("model", model);
  let body;
  try {
    body = await api("/api/v2/stats/series?" + query);
  } catch (error) {
    $("series-line").textContent = "The charts could not be read: " + error.message;
    $("series-line").hidden = false;
    return;
  }
  $("series-line").hidden = true;
  fillModelPicker(body.models, model);
  const start = Date.parse(body.start) / 1000;
  const count = body.series.requests.length;
  const xs = Array.from({ length: count }, (_, index) => start + index * body.step_s);
  const scope = model ? " of " + model : "";
  lineChart($("requests-chart"), {
    label: "Requests served per minute" + scope + ", last 24 hours", xs,
    series: [{ label: "Requests", values: body.series.requests }],
  });
  lineChart($("tokens-served-chart"), {
    label: "Tokens served per minute" + scope + ", last 24 hours", xs,
    series: [{ label: "Tokens", values: body.series.tokens }],
  });
  lineChart($("queue-chart"), {
    label: "Requests queued and workers online" + scope + ", last 24 hours", xs,
    series: [{ label: "Queued", values: body.series.queued }, { label: "Workers", values: body.series.workers }],
  });
}

function fillModelPicker(sampled, chosen) {
  const names = [...new Set([...sampled, ...online])].sort();
  const select = $("series-model");
  const known = [...select.options].map((option) => option.value).slice(1);
  if (known.join("\n") === names.join("\n")) return;
  select.replaceChildren(el("option", { value: "", text: "All models" }), ...names.map((name) => el("option", { value: name, text: name })));
  select.value = names.includes(chosen) ? chosen : "";
}

async function loadWorkers() {
  const rows = (await allWorkers()).map((worker) => [
    el("strong", { text: worker.name }), worker.type, worker.owner || "", worker.models.join(", "), worker.performance,
    duration(worker.uptime), kudos(worker.kudos_rewards),
    worker.maintenance_mode ? "maintenance" : worker.online ? "online" : "offline",
  ]);
  $("workers-list").replaceChildren(table(["Worker", "Kind", "Owner", "Models", "Speed", "Uptime", "Kudos", "State"], rows,
    { id: "workers-table", empty: "No worker." }));
}

export function setupStatus() {
  $("series-model").addEventListener("change", () => loadSeries());
}
