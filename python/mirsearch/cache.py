# SPDX-License-Identifier: MIT
"""Where the Python side keeps what it computes once: searched µGraphs by
program (until the library's result cache is bound: see partition.py)
and compiled kernels by source hash.

The directory is $MIRSEARCH_CACHE, else $XDG_CACHE_HOME/mirsearch, else
~/.cache/mirsearch.  Every file is written to a temporary name in the same
directory and renamed into place, so concurrent writers never leave a
half-written entry and a reader sees an old or a new one, never a mix."""

import hashlib
import json
import os
import tempfile


def default_dir():
    d = os.environ.get("MIRSEARCH_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "mirsearch")
    return d


def write_atomic(path, text):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def key(program, options):
    """The key of a search: the program's canonical hash and the options
    that change its results (all the options given, sorted)."""
    opts = json.dumps(sorted((str(k), str(v)) for k, v in (options or {}).items()))
    h = hashlib.sha256(("%016x\n" % program.hash + opts).encode()).hexdigest()[:32]
    return h


class ResultCache:
    """Best µGraphs by search key under DIR/results/KEY.json."""

    def __init__(self, directory=None):
        self.dir = os.path.join(directory or default_dir(), "results")

    def get(self, k):
        try:
            with open(os.path.join(self.dir, k + ".json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def put(self, k, entry):
        write_atomic(os.path.join(self.dir, k + ".json"), json.dumps(entry, indent=1))
