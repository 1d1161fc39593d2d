// The Account view: the balance, its history on the ledger, the charts of the last 30 days, a transfer, and a new
// key; the user's workers, shared keys and batches are their own modules.
import { $, api, attempt, el, kudos, onSessionChange, refreshUser, say, secretBox, session, signIn, table, when } from "./core.js";
import { daySeconds, lineChart } from "./charts.js";
import { finishProviderSignIn } from "./register.js";
import { loadMyWorkers } from "./my-workers.js";
import { loadSharedKeys, setupSharedKeys } from "./shared-keys.js";
import { loadBatches } from "./batches.js";

const HISTORY_PAGE = 25;
const CHART_DAYS = 30;
const ledgerPage = { cursor: null };

export async function loadAccount(query) {
  if (query.get("signed_in") === "oidc") {
    await finishProviderSignIn($("account-oidc"));
    window.history.replaceState(null, "", "#account");  // a reload does not ask again
  }
  const signedIn = Boolean(session.user);
  $("account-signed-out").hidden = signedIn;
  $("account-body").hidden = !signedIn;
  if (!signedIn) return;
  const user = await refreshUser();
  $("account-name").textContent = user.username;
  $("account-balance").textContent = kudos(user.kudos) + " kudos";
  await Promise.all([
    loadHistory(true), loadCharts(user.id), loadMyWorkers(user.id), loadSharedKeys(user), loadBatches(),
  ].map((part) => part.catch((error) => console.warn(error))));
}

// ---- the ledger ----

const KINDS = { charge: "request charged", reward: "earned by a worker", gifted: "sent", received: "received",
  grant: "granted", adjustment: "set by an admin", awarded: "awarded" };

async function loadHistory(fromStart) {
  const line = $("history-line");
  if (fromStart) ledgerPage.cursor = null;
  const query = new URLSearchParams({ limit: String(HISTORY_PAGE) });
  if (ledgerPage.cursor) query.set("cursor", ledgerPage.cursor);
  let page;
  try {
    page = await api("/api/v2/users/" + session.user.id + "/ledger?" + query);
  } catch (error) {
    say(line, "The history could not be read: " + error.message, true);
    throw error;
  }
  say(line, "");
  const rows = page.entries.map((entry) => [
    when(entry.created_at), KINDS[entry.kind] || entry.kind,
    el("span", { class: entry.amount < 0 ? "negative" : "positive", text: (entry.amount > 0 ? "+" : "") + kudos(entry.amount) }),
    el("span", { class: "balance-after", text: kudos(entry.balance_after) }),
    entry.counterpart ? entry.counterpart.username : "",
    entry.request_id ? el("code", { text: entry.request_id }) : "",
  ]);
  const built = table(["When", "What", "Kudos", "Balance after", "With", "Request"], rows,
    { id: "history-table", empty: "No kudos have moved yet." });
  const tbody = built.querySelector("tbody");
  if (fromStart) $("history").replaceChildren(built);
  else if (page.entries.length) $("history").querySelector("tbody").append(...tbody.querySelectorAll("tr"));
  ledgerPage.cursor = page.next_cursor;
  $("history-older").hidden = !page.next_cursor;
}

// ---- the charts ----

async function loadCharts(id) {
  const [balance, usage] = await Promise.all([
    api("/api/v2/users/" + id + "/balance_history?days=" + CHART_DAYS),
    api("/api/v2/users/" + id + "/usage?days=" + CHART_DAYS),
  ]);
  lineChart($("balance-chart"), {
    label: "Balance at the end of each day, last " + CHART_DAYS + " days (kudos)", daily: true,
    xs: balance.days.map((day) => daySeconds(day.day)),
    series: [{ label: "Balance", values: balance.days.map((day) => day.balance) }],
  });
  const xs = usage.days.map((day) => daySeconds(day.day));
  const column = (name) => usage.days.map((day) => day[name]);
  lineChart($("usage-chart"), {
    label: "Requests and kudos per day, last " + CHART_DAYS + " days", daily: true, xs,
    series: [{ label: "Requests", values: column("requests") }, { label: "Kudos spent", values: column("kudos_spent") },
      { label: "Kudos earned", values: column("kudos_earned") }],
  });
  lineChart($("tokens-chart"), {
    label: "Tokens generated for you per day, last " + CHART_DAYS + " days", daily: true, xs,
    series: [{ label: "Tokens", values: column("tokens") }],
  });
}

// ---- a transfer and a new key ----

async function transfer(event) {
  event.preventDefault();
  const username = $("transfer-username").value.trim();
  const amount = Number($("transfer-amount").value);
  await attempt($("transfer-line"), async () => {
    const done = await api("/api/v2/kudos/transfer", { method: "POST", body: { username, amount } });
    $("transfer-form").reset();
    say($("transfer-line"), "Sent " + kudos(done.transferred) + " kudos to " + username + ".");
    await loadAccount(new URLSearchParams());
  });
}

async function rotateKey() {
  const box = $("rotate-result");
  await attempt($("rotate-line"), async () => {
    const answer = await api("/api/v2/users/" + session.user.id + "/api_key", { method: "POST" });
    await signIn(answer.api_key);
    box.replaceChildren(secretBox("Your new API key", answer.api_key,
      "Shown this once. Your old key no longer works; this page now uses the new one."));
  });
}

// A key shown once goes from the page when its owner signs out.
function forgetShownKeys(current) {
  if (current.user) return;
  for (const id of ["account-oidc", "rotate-result", "register-result", "sharedkey-result"]) $(id).replaceChildren();
}

export function setupAccount() {
  onSessionChange(forgetShownKeys);
  $("transfer-form").addEventListener("submit", transfer);
  $("rotate-key").addEventListener("click", rotateKey);
  $("history-older").addEventListener("click", () => loadHistory(false).catch(() => {}));
  setupSharedKeys();
}
