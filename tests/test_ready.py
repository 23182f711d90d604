"""When to let a class in: `make run` says it in words once the last preheated kernel is ready.

Voila's own "Kernel pool of app.ipynb is filled with N kernel(s)" comes when the kernels have started,
while each still runs app.ipynb (30 kernels on two cores: about 34 s early). serving/kernels.py logs
"The dashboard is ready for N visitors at URL" once every preheated kernel waits for its visitor.
"""

import time

from harness.support.make import READY, dry_run


def test_make_run_says_what_line_to_wait_for():
    lines = dry_run("run")
    said = [line for line in lines if line.startswith("echo") and "is ready for N visitors" in line]
    voila = [i for i, line in enumerate(lines) if "-m voila app.ipynb" in line]
    assert said and voila and lines.index(said[0]) < voila[0]


def test_the_ready_line_comes_when_every_preheated_kernel_waits(make_run, tmp_path):
    log = tmp_path / "voila.log"
    with make_run(args=["POOL_SIZE=2"], log=log) as server:
        deadline = time.monotonic() + 300
        while not (found := READY.search(server.log_text())):
            assert time.monotonic() < deadline, server.log_tail()
            time.sleep(0.2)
        # At that moment both kernels have done their work: each waits, its CPU quiet.
        kernels = server.kernels()
        quiet = server.pool_ready()
        text = server.log_text()
    assert found.group(1) == "2" and found.group(2) == server.url
    assert len(kernels) == 2 and quiet, [k.cpu_percent(0.5) for k in kernels]
    filled = text.find("is filled with 2 kernel(s)")
    assert 0 <= filled < found.start(), "Voila's own line comes first, when the kernels have only started"
    assert len(READY.findall(text)) == 1, "said once"
