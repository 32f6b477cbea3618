"""Small private utilities every layer may use: atomic writes, bounded reads, progress
bars, thread pools, GPT-2's byte alphabet, and the package's version. Nothing here
imports the rest of bpetrain."""
