"""Small private utilities every layer may use: atomic writes, bounded reads, progress
bars and thread pools. Nothing here imports the rest of bpetrain."""
