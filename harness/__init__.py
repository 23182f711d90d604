"""What tests/ and benchmarks/ both use, and neither owns: the one `make run` Server (server.py), the
widget protocol client (protocol.py), Chromium's path and flags (chromium.py), the check that a page
draws its own kernel's run (pages.py), timing statistics (stats.py), the XLA compile counter
(compiles.py) and the loader of page probes written as .js files (js.py); and in support/, what
the test modules alone share. Nothing here is a test or
prints a figure; nothing in core/, widgets/ or serving/ imports it."""
