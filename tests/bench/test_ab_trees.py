"""`python -m bench.ab_trees`, short: two checkouts (here the same one twice) take turns in
each phase and each gets its rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import ab_trees

ROOT = Path(__file__).resolve().parents[2]


def test_a_tree_must_be_a_checkout_and_two_are_needed(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ab_trees.parse_args(["--tree", f"a={tmp_path}", "--tree", f"b={ROOT}"])
    with pytest.raises(SystemExit):
        ab_trees.parse_args(["--tree", f"a={ROOT}"])
    args = ab_trees.parse_args(["--tree", f"a={ROOT}", "--tree", f"b={ROOT}"])
    assert args.trees == {"a": ROOT, "b": ROOT}
    assert args.pythons == {}


def test_a_tree_may_run_on_another_interpreter_named_for_it(tmp_path: Path) -> None:
    trees = ["--tree", f"a={ROOT}", "--tree", f"b={ROOT}"]
    args = ab_trees.parse_args([*trees, "--python", f"b={sys.executable}"])
    assert args.pythons == {"b": sys.executable}
    assert ab_trees.tree_command(["serve"], args.pythons["b"])[0] == sys.executable
    for wrong in (f"c={sys.executable}", f"b={tmp_path / 'no-python'}", "b"):
        with pytest.raises(SystemExit):
            ab_trees.parse_args([*trees, "--python", wrong])


@pytest.mark.timeout(240)
def test_short_run_gives_each_tree_every_phase(tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    argv = ["--tree", f"a={ROOT}", "--tree", f"b={ROOT}", "--rounds", "1", "--scale", "0.05"]
    argv += ["--phases", "idle", "non-stream c=1", "stream c=1", "--json", str(out)]
    assert ab_trees.main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {(r["phase"], r["tree"]) for r in rows} == {
        (phase, tree) for phase in ("idle", "non-stream c=1", "stream c=1") for tree in "ab"
    }
    assert all(r["errors"] == 0 for r in rows)
    assert all(r["cpu_ms_per_s"] >= 0 for r in rows if r["phase"] == "idle")
    assert all(r["requests"] > 0 and r["cpu_us_per_request"] > 0 for r in rows if "requests" in r)
    assert all("cpu_us_per_chunk" in r for r in rows if r["phase"] == "stream c=1")


def test_each_tree_runs_its_own_code_whatever_the_working_directory(tmp_path: Path) -> None:
    # A stand-in checkout whose `gateway` says where it is; run from inside this repository,
    # whose own `gateway` the working directory would otherwise put first.
    fake = tmp_path / "tree"
    (fake / "gateway").mkdir(parents=True)
    (fake / "gateway" / "__init__.py").write_text("")
    (fake / "gateway" / "cli.py").write_text(
        "def main() -> int:\n    print(__file__)\n    return 0\n"
    )
    argv = ab_trees.tree_command(["serve"])
    done = subprocess.run(
        argv, cwd=ROOT, env=ab_trees.tree_env(fake), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == str(fake / "gateway" / "cli.py")
