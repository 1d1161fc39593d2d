// The page's views and its header: which view the address names (#view?query), the sign-in with a key, and the
// refresh of the views that show live figures.
import { $, attempt, kudos, onSessionChange, session, showError, signIn, signOut, storedKey } from "./core.js";
import { loadModels, setupModels } from "./models.js";
import { busy, setupPlayground } from "./playground.js";
import { loadStatus, setupStatus } from "./status.js";
import { endProviderSession, loadRegister, setupRegister } from "./register.js";
import { loadAccount, setupAccount } from "./account.js";
import { loadModerator, setupModerator } from "./moderator.js";

const REFRESH_MS = 10000;
const LOADERS = {
  models: loadModels, playground: loadModels, status: loadStatus, register: loadRegister, account: loadAccount,
  moderator: loadModerator,
};
// Views whose figures change by themselves; the others hold forms the refresh would disturb.
const LIVE = new Set(["models", "status"]);

function route() {
  const [name, query] = location.hash.slice(1).split("?");
  return { name: name in LOADERS ? name : "models", query: new URLSearchParams(query || "") };
}

// Show the view the address names; `moved`: the reader followed a link, so the focus goes to the view's heading.
async function show(moved = false) {
  const { name } = route();
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== "view-" + name;
  for (const link of document.querySelectorAll("nav a")) {
    const active = link.dataset.view === name;
    link.classList.toggle("active", active);
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (moved) document.querySelector("#view-" + name + " h2").focus();
  await refresh();
}

async function refresh() {
  const { name, query } = route();
  try {
    await LOADERS[name](query);
    if (!busy()) showError(null);
  } catch (error) {
    showError(error);
  }
}

function showSession() {
  const user = session.user;
  $("sign-in-form").hidden = Boolean(user);
  $("signed-in").hidden = !user;
  $("kudos").textContent = user ? user.username + " · " + kudos(user.kudos) + " kudos" : "";
  $("nav-moderator").hidden = !(user && user.moderator);
  $("nav-register").hidden = Boolean(user);
}

async function submitKey(event) {
  event.preventDefault();
  const key = $("api-key").value.trim();
  if (!key) return;
  const ok = await attempt($("sign-in-line"), () => signIn(key));
  if (ok) {
    $("api-key").value = "";
    await refresh();
  }
}

async function leave() {
  signOut();
  await endProviderSession().catch((error) => showError(error));
  if (route().name === "moderator") location.hash = "#account";
  else refresh();
}

async function start() {
  setupModels();
  setupPlayground();
  setupStatus();
  setupRegister();
  setupAccount();
  setupModerator();
  onSessionChange(showSession);
  $("sign-in-form").addEventListener("submit", submitKey);
  $("sign-out").addEventListener("click", leave);
  window.addEventListener("hashchange", () => show(true));
  setInterval(() => { if (LIVE.has(route().name)) refresh(); }, REFRESH_MS);
  const key = storedKey();
  if (key) await signIn(key).catch(() => signOut());
  showSession();
  await show();
}

start();
