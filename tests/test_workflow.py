"""The publishing workflow (.github/workflows/book.yml): valid, and it does what the README says.

Validity: check-jsonschema against the GitHub-workflow JSON schema it ships (SchemaStore's, vendored,
so no network), and a broken copy must be refused (the check can fail). Meaning: the build runs
`make book` (the strict build) on Python 3.11 for pull requests and main; only a push to main deploys
to GitHub Pages, with the permissions Pages needs; pull requests keep the site as an artifact; the
README states the published URL that _config.yml's repository gives.
"""

from __future__ import annotations

import re
import subprocess

import yaml
from conftest import ROOT, venv_tool

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"


def schema_check(path) -> subprocess.CompletedProcess:
    return subprocess.run([venv_tool("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", str(path)], capture_output=True, text=True)


def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def test_workflow_matches_the_github_schema():
    result = schema_check(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_check_refuses_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text().replace("runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04", 1)
    broken.write_text(text)
    assert schema_check(broken).returncode != 0


def test_build_is_the_strict_book_build_on_python_311():
    build = workflow()["jobs"]["build"]
    runs = [s.get("run", "") for s in build["steps"]]
    assert "make book" in runs
    assert "-W -n --keep-going" in (ROOT / "Makefile").read_text()  # what `make book` runs
    python = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert str(python["with"]["python-version"]) == "3.11"
    assert (ROOT / "runtime.txt").read_text().strip().startswith("python-3.11")


def test_pull_requests_build_and_only_main_deploys():
    wf = workflow()
    assert "pull_request" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]
    assert wf["permissions"] == {"contents": "read"}  # least privilege by default
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "build"
    assert "refs/heads/main" in deploy["if"] and "push" in deploy["if"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])
    steps = wf["jobs"]["build"]["steps"]
    artifact = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")
                and s["with"]["name"] == "book-html"]
    assert artifact and "pull_request" in artifact[0]["if"]
    assert artifact[0]["with"]["path"] == "_build/html"
    pages = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert pages["with"]["path"] == "_build/html"  # the JupyterLite site is _build/html/lite


def test_readme_states_the_published_url_of_the_repository():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)/?", config["repository"]["url"])
    assert match, config["repository"]["url"]
    owner, repo = match.groups()
    readme = (ROOT / "README.md").read_text()
    assert f"https://{owner}.github.io/{repo}/" in readme
    assert "https://<owner>.github.io/<repository>/" in readme  # the pattern, for forks
    assert ".github/workflows/book.yml" in readme


def test_every_action_is_pinned():
    uses = re.findall(r"uses:\s*(\S+)", WORKFLOW.read_text())
    assert uses
    loose = [u for u in uses if not re.search(r"@(v\d+(\.\d+)*|[0-9a-f]{40})$", u)]
    assert not loose, f"actions without a version or commit pin: {loose}"
