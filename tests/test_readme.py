"""The user documents: every code block runs as written, and no document carries what
belongs to the build machine or the project's history.

Documents are README.md, docs/*.md, benchmarks/README.md and CONTRIBUTING.md. In each, the
Python blocks run in order in one namespace, the bash blocks with the installed
``bpetrain`` command, in a fresh folder holding the small files the documents name
(corpus.txt, data/, web/*.jsonl.zst, part1.txt.gz, part2.txt.gz). A block after
``<!-- readme-test: skip (why) -->`` is not run (install, test and benchmark commands,
which CI runs itself or which need the corpora); one after ``<!-- readme-test: needs
openai-vocabs -->`` runs where OpenAI's rank files are found (``BPETRAIN_VOCABS`` or
../shared/vocabs) and skips, saying so, elsewhere. ``text`` blocks are shown, not run.

Every user document, CHANGELOG.md too, is checked for paths of a particular machine; all
but the changelog also for commit hashes and internal milestone names (sources are cited
by their public names), and for relative links that lead nowhere.
"""
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The documents whose code blocks run and whose text is checked.
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md", ROOT / "CONTRIBUTING.md"]
CHANGELOG = ROOT / "CHANGELOG.md"
BLOCK = re.compile(r"(?:<!-- readme-test: (?P<marker>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```", re.DOTALL)
VOCABS = pathlib.Path(os.environ.get("BPETRAIN_VOCABS") or ROOT.parent / "shared" / "vocabs")


def name(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def blocks(path: pathlib.Path) -> list[tuple[int, str, str, str]]:
    """(line, language, marker, code) of every fenced block of ``path``."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")), m["lang"], m["marker"] or "", m["code"])
            for m in BLOCK.finditer(text)]


def test_the_documents_are_found():
    names = {name(path) for path in DOCUMENTS}
    assert {"README.md", "docs/training.md", "docs/encoding.md", "docs/layout.md", "CONTRIBUTING.md"} <= names
    assert all(path.exists() for path in [*DOCUMENTS, CHANGELOG, ROOT / "LICENSE"])


def test_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


@pytest.mark.parametrize("path", DOCUMENTS, ids=name)
def test_every_block_is_python_bash_or_marked(path):
    for line, lang, marker, _ in blocks(path):
        where = f"{name(path)}:{line}"
        assert lang in ("python", "bash", "text"), f"{where}: a ```{lang} block (use python, bash or text)"
        assert marker == "" or marker.startswith(("skip (", "needs openai-vocabs")), f"{where}: {marker}"
        assert lang != "text" or marker == "", f"{where}: a text block is never run; it needs no marker"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The small files the documents name, made once; each document runs in a copy."""
    here = tmp_path_factory.mktemp("files")
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


@pytest.mark.parametrize("path", DOCUMENTS, ids=name)
def test_blocks_run(path, files, tmp_path, monkeypatch):
    folder = tmp_path / "run"
    shutil.copytree(files, folder)
    monkeypatch.chdir(folder)
    has_vocabs = (VOCABS / "cl100k_base.tiktoken").exists()
    env = {**os.environ, "BPETRAIN_VOCABS": str(VOCABS), "PATH": os.pathsep.join([os.path.dirname(sys.executable),
                                                                                  os.environ.get("PATH", "")])}
    monkeypatch.setenv("BPETRAIN_VOCABS", str(VOCABS))
    namespace: dict = {"__name__": "__main__"}  # as a script the blocks are pasted into
    ran = skipped = needs_vocabs = 0
    for line, lang, marker, code in blocks(path):
        if lang == "text":
            continue
        if marker.startswith("skip") or (marker.startswith("needs openai-vocabs") and not has_vocabs):
            skipped += 1
            needs_vocabs += marker.startswith("needs openai-vocabs")
            continue
        where = f"{name(path)}:{line}"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)  # noqa: S102 (the document's own code)
        else:
            assert shutil.which("bpetrain", path=env["PATH"]), "the bpetrain command is not installed"
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, capture_output=True, text=True,
                                 check=False)
            assert run.returncode == 0, f"{where}: exit {run.returncode}\n{run.stderr[-2000:]}"
        ran += 1
    if path == README:  # the quickstart runs; the install and test commands are marked, not lost
        assert ran >= 2 and skipped >= 2
    if needs_vocabs:
        pytest.skip(f"{name(path)}: ran {ran} blocks; {needs_vocabs} need OpenAI's rank files (not in {VOCABS})")


# ---------------------------------------------------------------- what documents hold

#: Paths of a particular machine: a home or work folder, or /tmp used as a place to put files.
MACHINE_PATH = re.compile(r"(?<![\w.~$])/(?:work|root|tmp|home|Users)/")
#: Names of the project's internal milestones and working documents.
MILESTONE = re.compile(r"\bstops? \d+\b|\bseeds? 0\d\d\b|\bsessions?\b", re.IGNORECASE)
#: Words that could be abbreviated commit hashes.
HEX_WORD = re.compile(r"(?<![\w/#.-])[0-9a-f]{7,40}(?![\w/-])")


def git_objects(words: set[str]) -> set[str]:
    """Those of ``words`` that name an object of this repository (empty without git or a repository)."""
    git = shutil.which("git")
    if not git or not words:
        return set()
    run = subprocess.run([git, "cat-file", "--batch-check"], input="".join(w + "\n" for w in sorted(words)),
                         cwd=ROOT, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        return set()  # not a repository (a source archive): the strict pattern below still applies
    return {line.split()[0] for line in run.stdout.splitlines() if not line.endswith(" missing")} & words


def hash_like(word: str) -> bool:
    """A word of 7+ hex digits with a letter and a digit: how abbreviated commit hashes look."""
    return re.search(r"[a-f]", word) is not None and re.search(r"\d", word) is not None


def problems(path: pathlib.Path, *, history: bool) -> list[str]:
    """What ``path`` must not hold: machine paths always; hashes and milestones unless ``history``."""
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, 1):
        found += [f"{name(path)}:{n}: machine path {m.group()!r}" for m in MACHINE_PATH.finditer(line)]
        if not history:
            found += [f"{name(path)}:{n}: internal name {m.group()!r}" for m in MILESTONE.finditer(line)]
    if not history:
        words = {m.group() for line in lines for m in HEX_WORD.finditer(line)}
        for word in sorted({w for w in words if hash_like(w)} | git_objects(words)):
            n = next(n for n, line in enumerate(lines, 1) if word in line)
            found.append(f"{name(path)}:{n}: commit hash {word!r} (say what is true now, without it)")
    return found


@pytest.mark.parametrize("path", DOCUMENTS, ids=name)
def test_no_hashes_milestones_or_machine_paths(path):
    assert problems(path, history=False) == []


def test_changelog_has_no_machine_paths():
    assert problems(CHANGELOG, history=True) == []


def test_the_checks_catch_what_they_look_for(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    bad = tmp_path / "bad.md"
    bad.write_text("measured at e876e60 in stop 27\nsee seed 002 and /work/corpora/x.txt\n"
                   "then cd /tmp/x\nfine: 0x7fffffff, 1,000,000, deadbeef, src/lib.rs, $TMPDIR/tmp/\n", encoding="utf-8")
    found = problems(bad, history=False)
    assert [p.split(": ", 1)[1] for p in found] == [
        "internal name 'stop 27'", "machine path '/work/'", "internal name 'seed 002'", "machine path '/tmp/'",
        "commit hash 'e876e60' (say what is true now, without it)"]
    assert [p.split(": ", 1)[1] for p in problems(bad, history=True)] == ["machine path '/work/'",
                                                                          "machine path '/tmp/'"]


# ---------------------------------------------------------------- links

LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def anchors(path: pathlib.Path) -> set[str]:
    """The anchors GitHub makes for the headings of ``path``."""
    made: dict[str, int] = {}
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    for heading in re.findall(r"^#+ +(.+?) *$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        made[slug] = made.get(slug, -1) + 1
        if made[slug]:
            made[f"{slug}-{made[slug]}"] = 0
    return set(made)


@pytest.mark.parametrize("path", [*DOCUMENTS, CHANGELOG], ids=name)
def test_relative_links_lead_somewhere(path):
    broken = []
    prose = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in LINK.findall(prose):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(target)
        elif anchor and (dest.is_dir() or anchor not in anchors(dest)):
            broken.append(target)
    assert broken == [], f"{name(path)}: links that lead nowhere"


def test_blocks_that_start_processes_run_as_scripts(files, tmp_path):
    """A block that starts worker processes works pasted into a script: the processes import
    the script (spawn), so what starts them must sit under ``if __name__ == "__main__":``."""
    pytest.importorskip("distributed", reason="the cluster example needs bpetrain[dask]")
    folder = tmp_path / "run"
    shutil.copytree(files, folder)
    scripts = [(path, line, code) for path in DOCUMENTS for line, lang, marker, code in blocks(path)
               if lang == "python" and not marker and "LocalCluster(" in code]
    assert scripts, "the cluster example is gone"
    for path, line, code in scripts:
        (folder / "script.py").write_text(code, encoding="utf-8")
        run = subprocess.run([sys.executable, "script.py"], cwd=folder, capture_output=True, text=True, check=False,
                             timeout=600)
        assert run.returncode == 0, f"{name(path)}:{line} as a script: exit {run.returncode}\n{run.stderr[-2000:]}"
