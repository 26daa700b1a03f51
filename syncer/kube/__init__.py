"""The only package that imports the kubernetes client.

Owns: a narrow KubeApi seam (list, get, server-side apply, delete) and the translation of client
errors into syncer.errors. Must not: hold policy or plan logic.
"""
