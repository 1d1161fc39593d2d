"""Registration's pages outside /api: the AI Horde's form (GET and POST /register, HTML), and the OpenID Connect
sign-in's two legs (/oidc/login sends the browser to the provider, /oidc/callback brings it back signed in).

A refusal is a page carrying the refusal's message, with its status (403, 400, 429 with Retry-After). The callback
sends the browser to the web page, `/#account?signed_in=oidc`, with the session's cookie set; the page reads
GET /api/v2/oidc/session (docs/reference/accounts.md#signing-in-through-an-openid-connect-provider).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Blueprint, Response, redirect, request
from werkzeug.wrappers import Response as BaseResponse

from horde.errors import HordeError
from horde.http.client_address import client_address
from horde.http.request_context import runtime
from horde.registration import html, oidc, signin
from horde.registration.modes import registration_mode
from horde.registration.service import account_of, register

if TYPE_CHECKING:
    from horde.registration.modes import RegistrationParts

#: Where the callback sends the browser: the web page's Account view, which asks who signed in.
SIGNED_IN_PAGE = "/#account?signed_in=oidc"
CALLBACK_PATH = "/oidc/callback"
HTML = "text/html; charset=utf-8"


def make_blueprint() -> Blueprint:
    blueprint = Blueprint("registration_pages", __name__)

    @blueprint.get("/register")
    def form() -> Response:
        hub = runtime()
        return _html(html.form_page(registration_mode(hub), provider=_provider_name(hub)))

    @blueprint.post("/register")
    def submit() -> Response:
        """The AI Horde's form: `username` (and `invite_code` by invitation) → the key in its page."""
        hub = runtime()
        username = request.form.get("username", "")
        address = client_address(request.environ, hub.settings.trusted_proxy_hops)
        try:
            made = register(hub, username, invite_code=request.form.get("invite_code") or None, address=address)
        except HordeError as refusal:
            page = html.form_page(
                registration_mode(hub), provider=_provider_name(hub), username=username, refusal=refusal.message
            )
            return _html(page, refusal.status, refusal.headers)
        return _html(html.key_page(made.username, made.api_key))

    @blueprint.get("/oidc/login")
    def login() -> BaseResponse:
        hub = runtime()
        provider = oidc.provider_of(hub.settings)
        if provider is None:
            return _html(html.failure_page("Sign-in is off", "This Horde has no sign-in provider."), 404)
        try:
            url, flow = oidc.begin(provider, provider.redirect_url or request.host_url.rstrip("/") + CALLBACK_PATH)
        except oidc.SignInFailed as failure:
            return _html(html.failure_page("Sign-in failed", failure.message), failure.status)
        answer = redirect(url, 302)
        _set_cookie(answer, signin.FLOW_COOKIE, signin.signed(hub, signin.FLOW_COOKIE, flow.to_json()), signin.FLOW_S)
        return answer

    @blueprint.get(CALLBACK_PATH)
    def callback() -> BaseResponse:
        hub = runtime()
        provider = oidc.provider_of(hub.settings)
        if provider is None:
            return _html(html.failure_page("Sign-in is off", "This Horde has no sign-in provider."), 404)
        kept = signin.unsigned(hub, signin.FLOW_COOKIE, request.cookies.get(signin.FLOW_COOKIE), signin.FLOW_S)
        address = client_address(request.environ, hub.settings.trusted_proxy_hops)
        try:
            identity = oidc.finish(provider, oidc.Flow.of(kept), request.args.to_dict())
            user_id, new_account = account_of(hub, identity, address=address)
        except oidc.SignInFailed as failure:
            return _forget_flow(_html(html.failure_page("Sign-in failed", failure.message), failure.status))
        except HordeError as refusal:
            page = html.failure_page("Sign-in refused", refusal.message)
            return _forget_flow(_html(page, refusal.status, refusal.headers))
        cookie, _expires_at = signin.start(hub, user_id, new_account=new_account)
        answer = redirect(SIGNED_IN_PAGE, 303)
        _set_cookie(answer, signin.SESSION_COOKIE, cookie, signin.SIGN_IN_SESSION_S, same_site="Strict", path="/")
        return _forget_flow(answer)

    return blueprint


def _provider_name(hub: RegistrationParts) -> str | None:
    provider = oidc.provider_of(hub.settings)
    return provider.name if provider else None


def _html(page: str, status: int = 200, headers: dict | None = None) -> Response:
    return Response(page, status=status, headers=headers or {}, content_type=HTML)


def _set_cookie(
    answer: BaseResponse, name: str, value: str, max_age_s: int, *, same_site: str = "Lax", path: str = "/oidc/"
) -> None:
    """A cookie the page's scripts cannot read (Secure as _secure says). The sign-in's state is Lax: the
    provider's redirect back is a navigation from another site."""
    answer.set_cookie(name, value, max_age=max_age_s, path=path, httponly=True, samesite=same_site, secure=_secure())


def _secure() -> bool:
    """Cookies go back only over HTTPS when the request came over it, or when the callback's configured address is
    HTTPS (behind a proxy that ends TLS, the Horde itself hears plain HTTP)."""
    redirect_url = runtime().settings.oidc_redirect_url or ""
    return request.is_secure or redirect_url.startswith("https://")


def _forget_flow(answer: BaseResponse) -> BaseResponse:
    answer.delete_cookie(signin.FLOW_COOKIE, path="/oidc/", httponly=True, samesite="Lax", secure=_secure())
    return answer
