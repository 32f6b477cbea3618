"""Every code block of README.md runs as written: the Python blocks in order in one
namespace, the bash blocks with the installed ``bpetrain`` command, in a folder holding the
small files the README names (corpus.txt, data/, web/*.jsonl.zst, part1.txt.gz,
part2.txt.gz). A block after ``<!-- readme-test: skip (why) -->`` is not run (the install
and test commands, which CI runs itself); one after ``<!-- readme-test: needs
openai-vocabs -->`` runs where OpenAI's rank files are found (``BPETRAIN_VOCABS`` or
../shared/vocabs) and skips, saying so, elsewhere."""
from __future__ import annotations

import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import zstandard
from helpers import MULTILINGUAL, stdlib_text

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"(?:<!-- readme-test: (?P<marker>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.DOTALL)
VOCABS = pathlib.Path(os.environ.get("BPETRAIN_VOCABS") or README.parent.parent / "shared" / "vocabs")


def blocks() -> list[tuple[int, str, str, str]]:
    """(line, language, marker, code) of every fenced block."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")), m["lang"], m["marker"] or "", m["code"])
            for m in BLOCK.finditer(text)]


def test_every_block_is_python_bash_or_marked():
    found = blocks()
    assert len(found) >= 8
    for line, lang, marker, _ in found:
        assert lang in ("python", "bash"), f"README.md:{line}: a ```{lang} block (use python or bash)"
        assert marker == "" or marker.startswith(("skip (", "needs openai-vocabs")), f"README.md:{line}: {marker}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    here = tmp_path_factory.mktemp("readme")
    text = stdlib_text(300_000).decode("utf-8") + MULTILINGUAL
    (here / "corpus.txt").write_text(text, encoding="utf-8")
    (here / "data").mkdir()
    (here / "data" / "a.txt").write_text(text[:100_000], encoding="utf-8")
    (here / "web").mkdir()
    records = "".join(json.dumps({"text": text[i : i + 500]}) + "\n" for i in range(0, 100_000, 500))
    (here / "web" / "a.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(records.encode()))
    for k, part in enumerate(("part1", "part2")):
        (here / f"{part}.txt.gz").write_bytes(gzip.compress(text[k * 150_000 : (k + 1) * 150_000].encode()))
    return here


def test_readme_blocks_run(folder, monkeypatch):
    monkeypatch.chdir(folder)
    has_vocabs = (VOCABS / "cl100k_base.tiktoken").exists()
    env = {**os.environ, "BPETRAIN_VOCABS": str(VOCABS), "PATH": os.pathsep.join([os.path.dirname(sys.executable),
                                                                                  os.environ.get("PATH", "")])}
    monkeypatch.setenv("BPETRAIN_VOCABS", str(VOCABS))
    namespace: dict = {"__name__": "readme"}
    ran = skipped = 0
    for line, lang, marker, code in blocks():
        if marker.startswith("skip") or (marker.startswith("needs openai-vocabs") and not has_vocabs):
            skipped += 1
            continue
        if lang == "python":
            exec(compile(code, f"README.md:{line}", "exec"), namespace)  # noqa: S102 (the README's own code)
        else:
            assert shutil.which("bpetrain", path=env["PATH"]), "the bpetrain command is not installed"
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True,
                                 check=False)
            assert run.returncode == 0, f"README.md:{line}: exit {run.returncode}\n{run.stderr[-2000:]}"
        ran += 1
    assert ran >= 6 and skipped >= 3
    if not has_vocabs:
        pytest.skip(f"ran {ran} blocks; {skipped} skipped, some needing OpenAI's rank files (not in {VOCABS})")
