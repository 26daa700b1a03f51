"""The git source: poll the remote tip, fetch incrementally, check out one exact revision. [I/O]

Owns: clones, ls-remote polls, fetches and checkouts with gitpython. Must not: judge signatures, parse
manifests or talk to clusters.
"""
