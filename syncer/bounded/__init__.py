"""Bounded reading of the files syncer is given: the rules every file goes by, whoever reads it.

Owns: opening a file only when it is a regular file within a stated size (a FIFO, a device or a
directory is never read; the size is checked before reading and again while reading), UTF-8 text, and
strict bounded YAML (JSON values only, string keys, no duplicate keys, integers within 64 bits,
aliases, nesting, documents and parser events bounded), each problem with its file, line and column.
The manifest loader (``syncer.manifests``) and the agent's own files (``syncer.config``) both read
through it, so the two cannot drift apart. Must not: know what the documents mean, import any syncer
package but ``syncer.errors``, do network I/O or run processes.
"""
