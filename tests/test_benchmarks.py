"""The benchmarks' own plumbing, which `make test` does not otherwise run: `make bench` starts the
dashboard through make run's voila command, whatever form that command takes."""

import subprocess

from benchmarks.browser import write_wrapper


def test_the_bench_serves_the_repository_through_make_runs_voila_command(tmp_path):
    fake = tmp_path / "fake-python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')  # prints the arguments it was given
    fake.chmod(0o755)
    wrapper = write_wrapper(tmp_path, fake, ["--pool_size=0"])
    run = subprocess.run(
        [wrapper, "-m", "voila", "app.ipynb", "--port=1", "--template=scanlab"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "HOME": str(tmp_path)},
    )
    served = ["-m", "voila", ".", "--port=1", "--template=scanlab", "--pool_size=0"]
    assert run.stdout.split("\n")[:-1] == served  # the directory instead of app.ipynb, extras last
    assert (tmp_path / "argv").read_text().split("\n")[:-1] == served[2:]
    assert (tmp_path / "env").read_text() == "JAX_PLATFORMS=cpu\n"
    # Every other use of python (make's set-up, tools/plotly_bundle.py) passes straight through.
    other = subprocess.run([wrapper, "tools/plotly_bundle.py"], capture_output=True, text=True, check=True)
    assert other.stdout == "tools/plotly_bundle.py\n"
    refused = subprocess.run([wrapper, "-m", "voila", "other.ipynb"], capture_output=True, text=True)
    assert refused.returncode == 2 and "no app.ipynb" in refused.stderr
