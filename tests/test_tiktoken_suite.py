"""tiktoken's own test suite, run with bpetrain standing in for tiktoken.

The tests of tiktoken's source package (``tests/``; not copied here: CONTRIBUTING.md's
"tiktoken's own test suite" shows how to get them) run twice, each in a subprocess, offline (a proxy
that refuses every connection) and with the same vocabulary files:

- with tiktoken itself, its cache seeded from ``$BPETRAIN_VOCABS`` (each file under the
  SHA-1 of its URL, where ``tiktoken.get_encoding`` looks first);
- with a stand-in ``tiktoken`` package first on ``sys.path`` whose names are bpetrain's
  (``Encoding``, ``get_encoding``, ``encoding_for_model``, ``encoding_name_for_model``,
  ``list_encoding_names``: all the tests import).

Every test that tiktoken passes must pass with bpetrain. Tests that need files absent
here (GPT-2's, r50k's, p50k's) fail for both; the summary lists them.

Set ``TIKTOKEN_TESTS`` to the ``tests`` directory; without it, or without the vocabulary
files, the test skips. ``-s`` shows the summary.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from helpers import VOCABS, require

from bpetrain.registry import ENCODINGS

SUITE = os.environ.get("TIKTOKEN_TESTS")

#: The stand-in package: tiktoken's public names, taken from bpetrain.
STAND_IN = '''"""bpetrain standing in for tiktoken (bpetrain's tests/test_tiktoken_suite.py)."""
from bpetrain import Encoding, encoding_for_model, encoding_name_for_model, get_encoding, list_encoding_names

__all__ = ["Encoding", "encoding_for_model", "encoding_name_for_model", "get_encoding", "list_encoding_names"]
'''

#: Where tiktoken's suite runs: an empty pytest configuration, no network.
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


@pytest.fixture(scope="module")
def suite() -> pathlib.Path:
    if not SUITE:
        pytest.skip("set TIKTOKEN_TESTS to the tests/ directory of tiktoken's source (CONTRIBUTING.md: tiktoken's own test suite)")
    pytest.importorskip("tiktoken", reason="tiktoken is a test dependency: pip install '.[test]'")
    require(VOCABS / "cl100k_base.tiktoken", "the OpenAI vocabularies (set BPETRAIN_VOCABS)")
    return require(pathlib.Path(SUITE) / "test_encoding.py", "TIKTOKEN_TESTS must name tiktoken's tests/").parent


def seed_cache(cache: pathlib.Path) -> list[str]:
    """Copy every vocabulary file of ``VOCABS`` into ``cache`` as tiktoken names it; return their names."""
    cache.mkdir()
    seeded = []
    for file in {file for spec in ENCODINGS.values() for file in spec.files}:
        if (VOCABS / file.name).is_file():
            shutil.copyfile(VOCABS / file.name, cache / hashlib.sha1(file.url.encode()).hexdigest())
            seeded.append(file.name)
    return sorted(seeded)


def run_suite(suite: pathlib.Path, workdir: pathlib.Path, stand_in: bool) -> dict[str, str]:
    """Run tiktoken's suite in a subprocess; return each test's outcome (passed, failed, error, skipped)."""
    workdir.mkdir()
    (workdir / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, **OFFLINE, "TIKTOKEN_CACHE_DIR": str(workdir.parent / "cache"), "BPETRAIN_VOCABS": str(VOCABS)}
    if stand_in:
        (workdir / "stand_in" / "tiktoken").mkdir(parents=True)
        (workdir / "stand_in" / "tiktoken" / "__init__.py").write_text(STAND_IN)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir / "stand_in"), env.get("PYTHONPATH")]))
    which = subprocess.run(
        [sys.executable, "-c", "import tiktoken, bpetrain; print(tiktoken.Encoding is bpetrain.Encoding)"],
        env=env, cwd=workdir, capture_output=True, text=True, check=True,
    )
    assert which.stdout.strip() == str(stand_in), which  # the tiktoken the suite imports is the one meant
    report = workdir / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "-c", str(workdir / "pytest.ini"), "--rootdir", str(workdir),
         "--import-mode=append", "-p", "no:cacheprovider", "-q", f"--junitxml={report}"],
        env=env, cwd=workdir, capture_output=True, text=True, check=False,
    )
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = {"failure": "failed"}.get(
            kinds[0], kinds[0]) if kinds else "passed"
    return outcomes


def test_tiktoken_suite_passes_with_bpetrain(suite, tmp_path):
    seeded = seed_cache(tmp_path / "cache")
    theirs = run_suite(suite, tmp_path / "tiktoken", stand_in=False)
    ours = run_suite(suite, tmp_path / "bpetrain", stand_in=True)
    passed_theirs = sorted(test for test, outcome in theirs.items() if outcome == "passed")
    passed_ours = sorted(test for test, outcome in ours.items() if outcome == "passed")
    missing = [test for test in passed_theirs if test not in passed_ours]
    both_fail = sorted(test for test in theirs if test not in passed_theirs and test not in passed_ours)
    summary = (
        f"tiktoken's suite ({suite}), offline, with the files {', '.join(seeded)}: "
        f"{len(theirs)} tests; tiktoken passes {len(passed_theirs)}, bpetrain {len(passed_ours)}.\n"
        f"Fail with both (files absent here): {', '.join(both_fail) or 'none'}\n"
        f"Pass with tiktoken only: {', '.join(missing) or 'none'}"
    )
    print(summary)
    assert set(ours) == set(theirs), summary
    assert not missing, summary
