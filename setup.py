"""Build the Cython kernels; all metadata lives in pyproject.toml.

Compiler directives are set here, once. ``BPETRAIN_DEBUG=1`` turns bounds and
wraparound checks back on (and the optimizer off) for a debug test run.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

NUMPY_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]  # NumPy's C API without its deprecated parts
DEBUG = os.environ.get("BPETRAIN_DEBUG", "") not in ("", "0")
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}
#: The compiled modules, lowest first: the split pattern's matchers and pipeline, the counter, the
#: encoder's buffers, tables, per-piece encoders and text loop, the incremental encoders,
#: the merge kernel's pair table and max-heap, the merge kernel, the rank-file reader.
KERNELS = [
    "bpetrain.splitting._blocks",
    "bpetrain.splitting._matcher",
    "bpetrain.splitting._pipeline",
    "bpetrain.counting._counter",
    "bpetrain.encoding._buffers",
    "bpetrain.encoding._tables",
    "bpetrain.encoding._heap",
    "bpetrain.encoding._linear",
    "bpetrain.encoding._piece",
    "bpetrain.encoding._encoder",
    "bpetrain.encoding._incremental",
    "bpetrain.training._pairs",
    "bpetrain.training._maxheap",
    "bpetrain.training._superword",
    "bpetrain.training._merge",
    "bpetrain.formats._rank_file",
]
#: Hand-written C compiled into a kernel beside its Cython, each file a translation unit of its own,
#: with the headers it includes (a change to them rebuilds the kernel): the DFA's vector-shuffle
#: loops (``_dfa_shuffle.c``), apart so that their size does not change what GCC inlines into
#: ``_matcher``'s own loops.
C_SOURCES = {
    "bpetrain.splitting._matcher": (["bpetrain/splitting/_dfa_shuffle.c"],
                                    ["bpetrain/splitting/_dfa_shuffle.h", "bpetrain/splitting/_dfa_shuffle_run.h",
                                     "bpetrain/_portable.h"]),
}
#: Optimization flags by compiler. GCC's inliner limits are raised so that the kernels'
#: small helpers inline into their loops; Clang has no such parameters. ``-g0``: no
#: debug information (Python's own flags ask for it), which would be five sixths of a
#: kernel's size and changes none of its code.
FLAGS = {
    "gcc": ["-O0", "-g"] if DEBUG else ["-O3", "-g0", "--param", "max-inline-insns-single=800",
                                       "--param", "inline-unit-growth=400"],
    "clang": ["-O0", "-g"] if DEBUG else ["-O3", "-g0"],
    "msvc": ["/Od", "/Zi"] if DEBUG else ["/O2"],
}


class BuildKernels(build_ext):
    """``build_ext`` that gives each extension the flags of the compiler at hand, and writes
    beside the splitter the installed ``regex`` module's character classes
    (``bpetrain/splitting/_regex_classes.bin``, :func:`bpetrain.splitting._charsets.write_facts`:
    a first split pattern compiles without asking ``regex`` about every code point; a
    ``regex`` of another version at run time is asked instead) and the compiled programs
    of the named encodings' patterns (``bpetrain/splitting/_shipped/``,
    :func:`bpetrain.splitting.pattern.ship_patterns`: a first process reads them instead
    of compiling; a build that cannot make them says so, and a first process compiles)."""

    def run(self):
        super().run()
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        try:
            from bpetrain.splitting import _charsets
        finally:
            sys.path.pop(0)
        folder = os.path.abspath("" if self.inplace else self.build_lib)
        _charsets.write_facts(os.path.join(folder, "bpetrain", "splitting", "_regex_classes.bin"))
        shipped = os.path.join(folder, "bpetrain", "splitting", "_shipped")
        shutil.rmtree(shipped, ignore_errors=True)
        with tempfile.TemporaryDirectory() as cache:  # the build's compiles leave the user's cache alone
            # A fresh interpreter imports the kernels just built (from build_lib unless in place).
            done = subprocess.run(
                [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                 "from bpetrain.splitting.pattern import ship_patterns; ship_patterns(sys.argv[2])", folder, shipped],
                env={**os.environ, "BPETRAIN_CACHE_DIR": cache}, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(shipped, ignore_errors=True)
            print(f"warning: no compiled split patterns shipped (a first process compiles them):\n{done.stderr}",
                  file=sys.stderr)

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:  # pip asks for no ``-j``: compile the kernels on every core
            self.parallel = True

    def build_extensions(self):
        flags = FLAGS[self.compiler_family()]
        for extension in self.extensions:
            extension.extra_compile_args = flags + extension.extra_compile_args
        super().build_extensions()

    def compiler_family(self):
        """``"msvc"``, ``"gcc"`` (GCC itself, not another compiler that defines
        ``__GNUC__``) or ``"clang"`` (Clang and any other: plain ``-O3``)."""
        if self.compiler.compiler_type == "msvc":
            return "msvc"
        with tempfile.TemporaryDirectory() as folder:
            probe = os.path.join(folder, "probe.c")
            with open(probe, "w") as f:
                f.write('#if !defined(__GNUC__) || defined(__clang__)\n#error "not GCC: setup.py uses plain -O3"\n#endif\n')
            try:
                self.compiler.compile([probe], output_dir=folder)
            except CompileError:
                return "clang"
        return "gcc"


def kernel(name):
    """The extension of the kernel ``name``: its Cython source and its hand-written C (C_SOURCES)."""
    sources, depends = C_SOURCES.get(name, ([], []))
    return Extension(name, [name.replace(".", "/") + ".pyx", *sources], depends=depends,
                     define_macros=NUMPY_MACROS, include_dirs=[numpy.get_include(), "bpetrain", "bpetrain/splitting"])


setup(
    cmdclass={"build_ext": BuildKernels},
    ext_modules=cythonize(
        [kernel(name) for name in KERNELS],
        compiler_directives=DIRECTIVES,
        nthreads=os.cpu_count() or 1,
        # Cython regenerates a C file only when its sources are newer, whatever the directives:
        # the debug build's C files live apart, so each build finds C made with its own.
        build_dir="build/debug-c" if DEBUG else None,
    ),
)
