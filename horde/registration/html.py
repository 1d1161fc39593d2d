"""The AI Horde's registration form, as plain server-rendered HTML: the form, the new key, a refusal, a sign-in's
failure. Every value is escaped; the pages load nothing from elsewhere.

The new key sits in `<code class="ah-api-key">KEY</code>`, where the AI Horde's tooling (its Locust suite's
bootstrap) reads it.
"""

from __future__ import annotations

from html import escape

from horde.registration.modes import Mode
from horde.registration.usernames import MAX_USERNAME_CHARS

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
label { display: block; margin-top: 1rem; font-weight: 600; }
input { font: inherit; padding: .4rem; width: 100%; box-sizing: border-box; }
button { font: inherit; margin-top: 1rem; padding: .5rem 1.5rem; }
.ah-api-key { display: block; padding: .75rem; background: #fef3c7; word-break: break-all; user-select: all; }
.refusal { padding: .75rem; background: #fee2e2; border: 1px solid #fca5a5; }
"""

_MODE_TEXT = {
    Mode.OPEN: "Choose a name; it need not be unique: the number after # tells accounts apart.",
    Mode.INVITE: "This Horde registers by invitation: enter the invite code you were given.",
    Mode.CLOSED: "This Horde is not taking new accounts.",
}


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body><main><h1>{escape(title)}</h1>\n{body}\n</main></body></html>\n"
    )


def form_page(mode: Mode, *, provider: str | None, username: str = "", refusal: str | None = None) -> str:
    """The form, with the mode's explanation, a refusal's message when there is one, and the provider's sign-in."""
    parts = [f"<p>{escape(_MODE_TEXT[mode])}</p>"]
    if refusal:
        parts.append(f'<p class="refusal" role="alert">{escape(refusal)}</p>')
    if mode is not Mode.CLOSED:
        invite = (
            '<label for="invite_code">Invite code</label><input id="invite_code" name="invite_code" required>'
            if mode is Mode.INVITE
            else ""
        )
        parts.append(
            '<form method="post" action="/register">'
            '<label for="username">Name</label>'
            f'<input id="username" name="username" maxlength="{MAX_USERNAME_CHARS}" required '
            f'value="{escape(username)}" autocomplete="username">'
            f'{invite}<button type="submit">Register</button></form>'
        )
    if provider:
        parts.append(f'<p><a href="/oidc/login">Sign in with {escape(provider)}</a></p>')
    return _page("Join the Horde", "\n".join(parts))


def key_page(username: str, api_key: str) -> str:
    """The new account and its key, shown this once."""
    return _page(
        "Welcome",
        f"<p>Your account is <strong>{escape(username)}</strong>. Your API key:</p>"
        f'<code class="ah-api-key">{escape(api_key)}</code>'
        "<p>Keep it now: it is shown this once and cannot be shown again. Send it as the <code>apikey</code> header "
        "(the native API) or as the bearer token (<code>/v1</code>).</p>"
        '<p><a href="/">Go to the Horde</a></p>',
    )


def failure_page(title: str, message: str) -> str:
    """A sign-in that did not complete, or the sign-in switched off."""
    return _page(title, f'<p class="refusal" role="alert">{escape(message)}</p><p><a href="/register">Back</a></p>')
