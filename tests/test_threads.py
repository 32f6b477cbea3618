"""The worker threads kept from call to call (bpetrain._util.threads): reused, shared with the
calling thread item by item, safe to nest, and forgotten by a forked child."""
from __future__ import annotations

import multiprocessing
import sys
import threading
import time
import weakref

import pytest
from helpers import MULTILINGUAL, stdlib_text

from bpetrain import BpeTrainer, Encoding
from bpetrain._util.threads import thread_map
from bpetrain.encoding.batching import LONG_TEXT

pytestmark = pytest.mark.usefixtures("threads_beyond_cores")


@pytest.fixture(scope="module")
def encoding():
    text = stdlib_text(100_000).decode("utf-8") + MULTILINGUAL * 5
    tok = BpeTrainer(256 + 500, pat_str="cl100k", min_frequency=1, show_progress=False).train_from_iterator([text])
    return Encoding("trained", pat_str=tok.pat_str, mergeable_ranks=tok.mergeable_ranks,
                    special_tokens={"<|endoftext|>": tok.n_vocab}), text


def test_threads_are_kept_for_the_next_call():
    """The caller works, with num_threads - 1 pool threads kept from call to call."""
    workers = set()  # the thread objects themselves: an ident may be given to a new thread
    for _ in range(6):
        workers.update(thread_map(lambda _: (time.sleep(0.001), threading.current_thread())[1], range(64), num_threads=3))
    assert 1 <= len(workers - {threading.current_thread()}) <= 2
    assert thread_map(lambda a, b: a * b, range(5), range(5, 10), num_threads=3) == [0, 6, 14, 24, 36]


@pytest.mark.parametrize("num_threads", [1, 2, 3, 8])
def test_results_in_item_order(num_threads):
    for n in [0, 1, 2, 5, 100]:
        assert thread_map(lambda a, b: a * 1000 + b, range(n), range(n, 2 * n), num_threads=num_threads) == [
            a * 1000 + b for a, b in zip(range(n), range(n, 2 * n))
        ]


def test_the_calling_thread_works_too():
    ran = thread_map(lambda _: (time.sleep(0.01), threading.get_ident())[1], range(20), num_threads=2)
    assert threading.get_ident() in ran and len(set(ran)) == 2


def test_no_more_threads_than_cores(monkeypatch):
    from bpetrain._util import threads as _threads

    for cores in (1, 2):
        monkeypatch.setattr(_threads, "usable_cores", lambda n=cores: n)
        ran = thread_map(lambda _: (time.sleep(0.005), threading.get_ident())[1], range(20), num_threads=8)
        assert len(set(ran)) == cores and threading.get_ident() in ran


def test_a_call_inside_an_item_of_the_calling_thread_runs_on_it_alone():
    """The pool thread is free again while the caller's item makes a threaded call: that
    call still runs on the caller alone (it may not wait for the outer call's helpers)."""
    def item(index):
        if index == 1:
            return None  # the helper's item: done at once
        time.sleep(0.02)  # the helper has finished item 1 by now
        return thread_map(lambda _: (time.sleep(0.005), threading.get_ident())[1], range(8), num_threads=2)

    for _ in range(5):
        inner, _ = thread_map(item, range(2), num_threads=2)
        assert len(set(inner)) == 1  # on whichever thread took item 0 (the caller, nearly always)


def test_a_slow_item_does_not_hold_the_others():
    """Items are taken as threads come free: the thread that took the slow item runs
    (almost) nothing else, the other runs the rest."""
    def run(index):
        time.sleep(0.5 if index == 0 else 0.01)
        return threading.get_ident()

    ran = thread_map(run, range(20), num_threads=2)
    slow = ran[0]
    assert ran.count(slow) <= 2 and len(set(ran)) == 2


@pytest.mark.parametrize("num_threads", [2, 3])
def test_the_first_failing_item_is_raised_and_no_item_starts_after_it(num_threads):
    started = []

    def run(index):
        started.append(index)
        if index in (30, 35):
            raise ValueError(index)
        time.sleep(0.002)
        return index

    with pytest.raises(ValueError) as raised:
        thread_map(run, range(200), num_threads=num_threads)
    assert raised.value.args == (30,)
    assert sorted(started) == list(range(len(started))) and len(started) < 40  # every earlier item ran
    seen = len(started)
    time.sleep(0.05)
    assert len(started) == seen  # every thread had stopped when it raised


def test_results_are_not_kept_alive_by_a_pool_thread():
    class Result:
        pass

    for _ in range(50):
        results = thread_map(lambda _: Result(), range(4), num_threads=2)
        alive = [weakref.ref(item) for item in results]
        del results
        assert all(ref() is None for ref in alive)


def within(seconds: float, function):
    """``function()``, which must return within ``seconds`` (a deadlock fails, not hangs)."""
    result = []
    watched = threading.Thread(target=lambda: result.append(function()), daemon=True)
    watched.start()
    watched.join(seconds)
    assert not watched.is_alive(), f"did not return within {seconds} s: a deadlock?"
    return result[0]


def test_a_text_for_one_kernel_call_is_shorter_than_a_text_for_threads():
    """encode_doc takes texts of fewer than DOC_CHARS characters in one call; at 4 bytes a
    character they stay under LONG_TEXT bytes, the length from which a text is encoded on
    threads, so no text that threads would share goes to one kernel call."""
    from bpetrain.encoding._encoder import DOC_CHARS

    assert DOC_CHARS * 4 <= LONG_TEXT


def test_a_threaded_call_inside_a_threaded_call_runs_on_its_thread(encoding):
    """encode_batch with special tokens encodes each text on a pool thread, and a text of
    LONG_TEXT bytes or more is itself cut for threads: the inner call must not wait for
    the pool it runs on (it would wait forever), and the ids must be encode's."""
    enc, text = encoding
    long_text = (text * (LONG_TEXT // len(text) + 2))[: LONG_TEXT + 5000]
    docs = [long_text + "<|endoftext|>", "x<|endoftext|>y", long_text[:777]]
    expected = [enc.encode(d, allowed_special="all") for d in docs]
    for num_threads in (1, 2, 3):
        assert within(60, lambda n=num_threads: enc.encode_batch(docs, num_threads=n, allowed_special="all")) == expected
    inner = within(60, lambda: thread_map(lambda _: thread_map(lambda _: threading.get_ident(), range(4), num_threads=2),
                                          range(2), num_threads=2))
    assert all(len(set(idents)) == 1 for idents in inner)


def _batch_in_child(enc, docs, queue):
    queue.put(enc.encode_ordinary_batch(docs, num_threads=2))


@pytest.mark.skipif(sys.platform == "win32" or "fork" not in multiprocessing.get_all_start_methods(),
                    reason="needs the fork start method")
def test_a_forked_child_makes_threads_of_its_own(encoding):
    """A child forked after a threaded call has none of its parent's threads: its own
    threaded calls must make new ones, not wait for threads that are not there."""
    enc, text = encoding
    docs = [text[i : i + 2000] for i in range(0, 400_000, 2000)]
    expected = enc.encode_ordinary_batch(docs, num_threads=2)  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_batch_in_child, args=(enc, docs, queue))
    child.start()
    try:
        assert queue.get(timeout=60) == expected
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_setaffinity"), reason="needs sched_setaffinity (Linux)")
def test_threads_follow_the_cpus_the_process_may_use(tmp_path):
    """Held to one CPU (as ``taskset`` or a container's CPU set does), bpetrain counts one
    core, wherever it sizes its threads (counting, training's base tokens, long texts),
    not every CPU of the machine."""
    import subprocess

    script = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
              "from bpetrain._util.threads import DEFAULT_THREADS, usable_cores; "
              "print(usable_cores(), DEFAULT_THREADS)")
    # Run outside the source tree, so the child imports the installed package, as the tests do.
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1"]


def test_counting_threads_are_counted_when_called(monkeypatch, tmp_path):
    """Without ``num_threads`` counting takes the CPUs usable at the call, not at import."""
    from bpetrain.counting import parallel
    from bpetrain.counting.inputs import expand_inputs

    made = []
    real = parallel.PieceCounter
    monkeypatch.setattr(parallel, "PieceCounter", lambda *a, **k: made.append(1) or real(*a, **k))
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    (tmp_path / "a.txt").write_text("some text to count\n")
    counter = parallel.count_sources(expand_inputs([tmp_path / "a.txt"]), pat_str=None, show_progress=False)
    assert len(made) == 3 and counter.table().n_pieces == 1
