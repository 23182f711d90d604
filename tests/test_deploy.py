"""Beyond one machine (issue 7): what Binder and a Zero to JupyterHub deployment read from this repo.

Nothing here builds an image or talks to a cluster; each test checks a promise of the files that
repo2docker (`environment.yml`, `start`) and Helm (`deploy/jupyterhub/config.yaml`) consume.
`tests/test_project.py` already checks that environment.yml pins exactly requirements.lock.
"""

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil
import pytest
import yaml
from packaging.specifiers import SpecifierSet

from harness.server import free_port, stop_group, wait_until_answers
from harness.support.dashboard import Dashboard
from tools import hub_pin

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "deploy" / "jupyterhub"
DASHBOARD = "voila/render/app.ipynb"

# A pip requirement that pip can only get from the index: `name==version`, no path, URL or option.
PINNED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!-]*")


def _hub_config() -> dict:
    return yaml.safe_load((HUB / "config.yaml").read_text())


def _hub_readme() -> str:
    return (HUB / "README.md").read_text()


def _bytes(quantity: str | int) -> int:
    """KubeSpawner's reading of a memory quantity: 512M, 1G, or a plain number of bytes."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    text = str(quantity)
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


# Binder ----------------------------------------------------------------------------------------


def test_binder_builds_from_the_root_environment_yml():
    # repo2docker reads binder/ (or .binder/) instead of the root when it exists, and a Dockerfile
    # overrides every other file: either would leave environment.yml and `start` unread.
    for name in ("binder", ".binder", "Dockerfile"):
        assert not (ROOT / name).exists(), f"{name} would hide environment.yml from repo2docker"
    assert (ROOT / "environment.yml").is_file()


def test_environment_yml_installs_from_conda_forge_and_pypi_alone():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert set(env) <= {"name", "channels", "dependencies"}, "no prefix or other machine-local key"
    assert env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pythons = [d for d in conda if d.startswith("python=")]
    assert len(pythons) == 1 and set(conda) == {"pip", pythons[0]}, "conda brings Python and pip only"
    python = pythons[0].removeprefix("python=")
    pips = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert re.fullmatch(r"3\.\d+", python) and python in SpecifierSet(requires), (python, requires)
    assert len(pips) == 1 and pips[0]
    for line in pips[0]:
        assert PINNED.fullmatch(line), f"{line!r}: only name==version, no path, URL or option"


def test_readme_gives_the_binder_link_of_ones_own_repository():
    # No badge to a placeholder repository (it was a dead link): the steps for one's own, with the
    # mybinder.org address that opens the dashboard.
    readme = (ROOT / "README.md").read_text()
    assert "OWNER/" not in readme and "badge_logo.svg" not in readme
    [row] = [line for line in readme.splitlines() if line.startswith("| Binder |")]
    url = urlsplit(re.search(r"`(https://mybinder\.org/v2/gh/[^`]+)`", row)[1])
    assert url.path.removeprefix("/v2/gh/").split("/") == ["<owner>", "<repository>", "HEAD"]
    assert "urlpath=voila%2Frender%2Fapp.ipynb" in url.query.split("&")
    assert parse_qs(url.query)["urlpath"] == [DASHBOARD]
    assert (ROOT / "app.ipynb").is_file()


def test_repo2docker_scripts_are_executable_bash_that_parses():
    scripts = [ROOT / name for name in ("postBuild", "start") if (ROOT / name).exists()]
    assert ROOT / "start" in scripts
    for script in scripts:
        assert os.access(script, os.X_OK), f"{script.name} must be executable (git keeps the bit)"
        assert script.read_text().startswith("#!/bin/bash\n"), f"{script.name}: bash, as in every image"
        result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    lines = [line for line in (ROOT / "start").read_text().splitlines() if line and line[0] != "#"]
    assert lines[-1] == 'exec "$@"', "start must hand over to the server it wraps"


def _run_start(tmp_path: Path, **preset: str) -> dict[str, str]:
    dump = "import json, os; print(json.dumps(dict(os.environ)))"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **preset}
    result = subprocess.run(
        [str(ROOT / "start"), sys.executable, "-c", dump], capture_output=True, text=True, env=env
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_start_exports_what_make_run_exports(tmp_path):
    makefile = (ROOT / "Makefile").read_text()
    exported = dict(re.findall(r"^(?:[\w ]+:\s*)?export (\w+) \?= *(.*)$", makefile, flags=re.M))
    start = set(re.findall(r"^export (\w+)=", (ROOT / "start").read_text(), flags=re.M))
    # And the Jupyter paths of the page template (make run puts it on its command line instead).
    assert start == set(exported) | {"JUPYTER_PATH", "JUPYTER_CONFIG_PATH"}, "start sets what `make run` sets"

    env = _run_start(tmp_path)
    for name, value in exported.items():
        if "$(" not in value:
            assert env[name] == value, name
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / ".cache" / "jax")

    # Like the Makefile's `?=`, a value already set (say by the hub's singleuser.extraEnv) wins.
    preset = {"JAX_PLATFORMS": "cuda,cpu", "MALLOC_ARENA_MAX": "4"}
    env = _run_start(tmp_path, **preset)
    assert {name: env[name] for name in preset} == preset


def _plant_lab_extension(share: Path, name: str) -> None:
    """A federated JupyterLab extension as repo2docker's JupyterLab and Notebook install theirs
    (Notebook 7.6's @jupyter-notebook/lab-extension failed to load in Voila's page: "Failed to
    create module")."""
    folder = share / "labextensions" / name
    (folder / "static").mkdir(parents=True)
    build = {"load": "static/remoteEntry.0.js", "extension": "./extension"}
    (folder / "package.json").write_text(
        json.dumps({"name": name, "version": "1.0.0", "jupyterlab": {"_build": build}})
    )
    (folder / "static" / "remoteEntry.0.js").write_text(
        "throw new Error('an extension Voila must not load');\n"
    )


def test_the_binder_route_serves_the_dashboard_without_the_labs_extensions(jupyter_server, browser, tmp_path):
    # Binder and the hub: postBuild, then a Jupyter server started through `start`, as repo2docker
    # does, beside the lab extensions of the JupyterLab and Notebook it adds. The page draws every
    # chart, says when its kernel stops (the scanlab template), and loads only the extensions
    # voila.json allows (the page's own plugin among them): no other lab's extension, no version
    # warning beyond Voila's own stack's.
    # The environment's python first on PATH, as in the image.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    built = subprocess.run(
        ["bash", str(ROOT / "postBuild")], cwd=ROOT, env={"PATH": path}, capture_output=True
    )
    assert built.returncode == 0, built.stderr
    share = tmp_path / "share"
    _plant_lab_extension(share, "@jupyter-notebook/lab-extension")
    port = free_port()
    env = {"PATH": path, "HOME": str(tmp_path), "JUPYTER_PATH": str(share)}
    server = jupyter_server(
        [str(ROOT / "start"), sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/api", server, 120, "the Jupyter server")
        dashboard = Dashboard(browser, f"http://127.0.0.1:{port}/{DASHBOARD}")
        said = []
        dashboard.page.on("console", lambda message: said.append(message.text))
        dashboard.in_view()
        drawn = dashboard.page.locator(".js-plotly-plot").count()
        page = dashboard.page.content()
        asked = list(dashboard.requests)
        errors = [
            e for e in dashboard.errors if "mathjax" not in e.lower() and "ERR_NAME_NOT_RESOLVED" not in e
        ]
        dashboard.close()
        # Voila's listing, a page of the same app with no kernel: the page's plugin waits for no
        # widgets there (a listing shown only once Voila's app has started).
        tree = browser.new_page()
        tree.on("console", lambda message: message.type in ("error", "warning") and said.append(message.text))
        began = time.monotonic()
        tree.goto(f"http://127.0.0.1:{port}/voila/tree", timeout=60_000)
        tree.get_by_text("app.ipynb").first.wait_for(timeout=60_000)
        listed = time.monotonic() - began
        tree.close()
    finally:
        children = []
        with contextlib.suppress(psutil.NoSuchProcess):  # (a server that died leaves none to list)
            children = psutil.Process(server.pid).children(recursive=True)
        stop_group(server, [child.pid for child in children])
    assert "The dashboard's kernel stopped" in page and "ScanLab: the training loop" in page
    assert drawn >= 6
    assert not [url for url in asked if "jupyter-notebook" in url], "Voila's page loaded the lab's extension"
    assert any("/voila/labextensions/anywidget/" in url for url in asked)
    assert any("/voila/labextensions/scanlab-page/" in url for url in asked)  # tests/test_page_plugin.py
    assert not [text for text in said if "Failed to create module" in text]
    assert listed < 10, f"the listing came {listed:.1f} s after the navigation"
    assert not [text for text in said if "scanlab-page" in text]
    assert errors == []


# Zero to JupyterHub -------------------------------------------------------------------------------


def test_chart_version_is_pinned_alike_in_config_and_readme():
    pinned = re.findall(r"^# chart: jupyterhub (\S+) ", (HUB / "config.yaml").read_text(), flags=re.M)
    commands = re.findall(r"helm upgrade [^`]*?--version (\S+)", _hub_readme())
    assert len(pinned) == 1 and re.fullmatch(r"\d+\.\d+\.\d+", pinned[0]), pinned
    assert commands == pinned, "README's helm command must install the chart version config.yaml names"
    assert "--values deploy/jupyterhub/config.yaml" in _hub_readme()


def test_hub_opens_every_server_on_the_dashboard():
    singleuser = _hub_config()["singleuser"]
    assert singleuser["defaultUrl"] == "/" + DASHBOARD
    # repo2docker copies the repository into the home directory; a volume mounted over it would hide
    # it, so the student's volume goes below it (tests/test_hub_home.py: what it keeps).
    storage = singleuser["storage"]
    assert storage["type"] == "none" or storage["homeMountPath"].startswith("/home/jovyan/")


def test_hub_culls_idle_servers_and_kernels_like_voila_json():
    config = _hub_config()
    cull = config["cull"]
    assert cull["enabled"] is True and cull["timeout"] > 0 and cull["every"] > 0
    files = list(config["singleuser"]["extraFiles"].values())
    server = [f for f in files if f["mountPath"].endswith("/jupyter_server_config.json")]
    assert len(server) == 1 and server[0]["mountPath"].startswith(
        ("/etc/jupyter/", "/usr/local/etc/jupyter/")
    )
    voila = json.loads((ROOT / "voila.json").read_text())
    assert server[0]["data"]["MappingKernelManager"] == voila["MappingKernelManager"]


def test_hub_image_is_the_one_readme_builds():
    image = _hub_config()["singleuser"]["image"]
    name, tag = image["name"], image["tag"]
    assert isinstance(tag, str) and tag != "latest", "quote the tag; never latest"
    assert re.fullmatch(r"[0-9a-f]{7,40}", tag), "the tag is the commit the image was built from"
    assert name == name.lower() and ":" not in name.split("/")[-1]
    readme = _hub_readme()
    assert re.findall(r"--image-name (\S+)", readme) == [f"{name}:{tag}"]
    assert re.findall(r"--ref (\S+)", readme) == [tag]
    assert re.findall(r"docker push (\S+)", readme) == [f"{name}:{tag}"]


def _full_history():
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("needs the git history: not a git checkout, or a shallow clone")


def test_the_hub_image_pin_is_current():
    # An image built from the pin must run what `make run` runs: nothing the image uses changed since.
    _full_history()
    check = subprocess.run(
        [sys.executable, "tools/hub_pin.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert hub_pin.pinned() == _hub_config()["singleuser"]["image"]["tag"]


def test_a_stale_pin_names_what_changed():
    _full_history()
    first = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()[0]
    changed = hub_pin.changed_since(first)
    assert "widgets/explorer.py" in changed and "environment.yml" in changed
    assert not any(path.startswith(("tests/", "docs/", "deploy/", "benchmarks/")) for path in changed)


def test_hub_memory_fits_a_measured_dashboard():
    singleuser = _hub_config()["singleuser"]
    memory, cpu = singleuser["memory"], singleuser["cpu"]
    guarantee, limit = _bytes(memory["guarantee"]), _bytes(memory["limit"])
    # docs/performance.md: a dashboard kernel under 250 MB RSS; the single-user server about 100 MB.
    assert guarantee >= (340 + 100) * 10**6
    assert limit >= guarantee
    assert 0 < cpu["guarantee"] <= cpu["limit"]


@pytest.mark.parametrize("path", ["config.yaml", "README.md"])
def test_deploy_files_hold_no_secrets(path):
    def keys(node):
        if isinstance(node, dict):
            for key, value in node.items():
                yield key
                yield from keys(value)
        elif isinstance(node, list):
            for value in node:
                yield from keys(value)

    secret = {"cookieSecret", "secretToken", "client_secret", "password", "api_token", "apiToken"}
    if path == "config.yaml":
        assert not secret & set(keys(_hub_config()))
    else:
        # README's auth.yaml example shows where secrets go, with "..." in place of each.
        for line in _hub_readme().splitlines():
            if re.match(r"\s*(client_secret|password|cookieSecret|secretToken):", line):
                assert line.split(":", 1)[1].strip() == '"..."', line
