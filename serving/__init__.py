"""What `make run` adds to the standalone `voila` command (the Makefile's `run` target wires it in):

- `kernels.CappedKernelManager`: at most `max_kernels` kernels at once, the preheated one included; a
  visitor over the cap gets a 503 "busy, try again in a minute" page and no kernel is started. When
  the server stops, a kernel busy in a cell is killed (asked instead, ipykernel printed a ZMQError).
- `identity.XsrfCookieIdentityProvider`: gives each dashboard page the `_xsrf` cookie, so the shutdown
  request the page sends when its tab closes is accepted and the kernel ends at once.
- `trust`: signs app.ipynb in a notary of `make run`'s own (the Makefile runs it before Voila), so
  that Voila does not log "not trusted" for every page.
- `jupyter/voila/templates/scanlab`: the page template (Voila's `lab` plus a notice with a Reload
  button when the page's kernel stops) and the busy page (`503.html`).
- `jupyter/voila/labextensions/scanlab-page`: a plugin of the page that holds Voila's app's start,
  and so the rendering of the widget outputs, until the widget manager has restored the kernel's
  widgets.

Two modules run in the dashboard's kernel instead: `preheat.wait_for_request`, Voila's own without
the cost of importing Voila's server side, and `heap.return_freed_memory`, which hands the heap
that the kernel's start-up freed back to the system.

The server imports this package from the repository root (`python -m voila`), and finds the template
through JUPYTER_PATH; neither is in voila.json, which Voila's server extension (Binder, JupyterHub)
also reads.
"""
