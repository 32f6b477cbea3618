"""Build the Cython kernels; all metadata lives in pyproject.toml.

Compiler directives are set here, once. ``BPETRAIN_DEBUG=1`` turns bounds and
wraparound checks back on for a debug test run.
"""
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

NUMPY_MACROS = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]  # NumPy's C API without its deprecated parts
DEBUG = os.environ.get("BPETRAIN_DEBUG", "") not in ("", "0")
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
}
#: The compiled modules, lowest first: the split pattern's matchers, the counter, the
#: encoder's buffers, tables, per-piece encoders and text loop, the incremental encoders,
#: the merge kernel's pair table and max-heap, the merge kernel.
KERNELS = [
    "bpetrain.splitting._blocks",
    "bpetrain.splitting._matcher",
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
    "bpetrain.training._merge",
]
COMPILE_ARGS = ["-O0", "-g"] if DEBUG else ["-O3", "--param", "max-inline-insns-single=800", "--param", "inline-unit-growth=400"]

setup(
    ext_modules=cythonize(
        [
            Extension(name, [name.replace(".", "/") + ".pyx"], extra_compile_args=COMPILE_ARGS,
                      include_dirs=[numpy.get_include(), "bpetrain/splitting"], define_macros=NUMPY_MACROS)
            for name in KERNELS
        ],
        compiler_directives=DIRECTIVES,
    ),
)
