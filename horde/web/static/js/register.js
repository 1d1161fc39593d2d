// The Register view (POST /api/v2/register), and the OpenID Connect sign-in's return to the page: the key a new
// account gets is shown once, and the page signs in with it.
import { $, api, attempt, el, say, secretBox, session, signIn } from "./core.js";

const ONCE = "This key is shown this once: the Horde keeps only its hash and cannot show it again. Copy it now and keep it safe.";

let status = null;

// What the Horde offers (GET /api/v2/register): the mode, and the provider's sign-in.
async function registrationStatus() {
  if (!status) status = await api("/api/v2/register", { key: "" });
  return status;
}

export async function loadRegister() {
  status = null;
  const offer = await registrationStatus();
  const mode = offer.registration;
  $("register-invite-row").hidden = mode !== "invite";
  $("register-invite").required = mode === "invite";
  const notes = { open: "Anyone may register.", invite: "Registration is by invitation: enter your invite code.",
    closed: "Registration is closed on this Horde right now." };
  say($("register-mode"), notes[mode] || "");
  showProviderLinks(offer.oidc);
}

function showProviderLinks(oidc) {
  for (const link of document.querySelectorAll(".oidc-link")) {
    link.hidden = !oidc.enabled;
    link.href = oidc.login_url;
    link.textContent = "Sign in with " + (oidc.provider || "your provider");
  }
}

async function register(event) {
  event.preventDefault();
  const body = { username: $("register-username").value };
  const invite = $("register-invite").value.trim();
  if (!$("register-invite-row").hidden && invite) body.invite_code = invite;
  const result = $("register-result");
  result.replaceChildren();
  await attempt($("register-line"), async () => {
    const made = await api("/api/v2/register", { method: "POST", body, key: "" });
    result.append(el("p", { text: "Welcome, " + made.username + ". You are signed in with your new key." }),
      secretBox("Your API key", made.api_key, ONCE));
    $("register-form").reset();
    await signIn(made.api_key);
  });
}

// After /oidc/callback the browser lands on #account?signed_in=oidc: ask who signed in; a new account gets its
// first key at once (shown once); an account that signed in before offers a new key (its old one is replaced).
export async function finishProviderSignIn(box) {
  const signedIn = await api("/api/v2/oidc/session", { key: "" });
  box.replaceChildren();
  if (!signedIn.signed_in) {
    box.append(el("p", { class: "error", text: "The sign-in session has ended: sign in again." }));
    return;
  }
  const newKey = async () => {
    const answer = await api("/api/v2/oidc/api_key", { method: "POST", key: "", headers: { "X-CSRF-Token": signedIn.csrf_token } });
    box.replaceChildren(secretBox("Your API key", answer.api_key, ONCE));
    await signIn(answer.api_key);
  };
  if (signedIn.new_account) { await newKey(); return; }
  if (session.user && session.user.id === signedIn.user.id) return;
  const line = el("p", { class: "status", "aria-live": "polite" });
  const button = el("button", { type: "button", text: "Get a new API key", onclick: () => attempt(line, newKey) });
  box.append(el("p", { text: "Signed in as " + signedIn.user.username + " through your provider. If you have lost your key, "
    + "get a new one: the old key stops working." }), button, line);
}

// Signing out of the page ends the provider's sign-in session too, when there is one (its cookie goes with it).
export async function endProviderSession() {
  const signedIn = await api("/api/v2/oidc/session", { key: "" });
  if (signedIn.signed_in) {
    await api("/api/v2/oidc/session", { method: "DELETE", key: "", headers: { "X-CSRF-Token": signedIn.csrf_token } });
  }
}

export function setupRegister() {
  $("register-form").addEventListener("submit", register);
  registrationStatus().then((offer) => showProviderLinks(offer.oidc)).catch(() => {});
}
