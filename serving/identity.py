"""The `_xsrf` cookie for the dashboard page, so that closing its tab frees its kernel."""

import inspect

from jupyter_server.auth.identity import PasswordIdentityProvider
from voila.handler import VoilaHandler


class XsrfCookieIdentityProvider(PasswordIdentityProvider):
    """Voila's default identity provider, which also gives every dashboard page the `_xsrf` cookie.

    On `beforeunload` Voila's page posts `/voila/api/shutdown/<kernel>` with the `_xsrf` cookie's value
    as a form field (widgets-manager8), and jupyter_server checks it against the cookie
    (`JupyterHandler.check_xsrf_cookie`). A Jupyter page gets that cookie by rendering `xsrf_token`
    in its template; Voila's page never does (with preheated kernels it is rendered before the
    request even arrives), so the post was refused with 403 "'_xsrf' argument missing from POST"
    (voila-dashboards/voila#1458) and the kernel lived on until culled. Reading `xsrf_token` here sets
    the cookie when the request has none; the check itself stays as it is.
    """

    async def get_user(self, handler):
        user = super().get_user(handler)
        if inspect.isawaitable(user):
            user = await user
        if user is not None and isinstance(handler, VoilaHandler) and handler.request.method == "GET":
            handler.current_user = user  # what prepare() sets next; tornado's xsrf_token reads it
            handler.xsrf_token  # noqa: B018 - the property sets the cookie
        return user
