# SPDX-License-Identifier: MIT
"""Loading libmirsearch and declaring the C functions the package calls.

The library is looked for, in order: the file named by $MIRSEARCH_LIB; a
build tree ($MIRSEARCH_BUILDDIR, else the tree this package sits in when it
is imported from a source checkout: ../.libs); the libdir `pkg-config
mirsearch` names (an install prefix); the `mirsearch` program's prefix on
PATH; the system's search path.  Every prototype is declared once, in
_PROTOS, so a wrong argument type is a ctypes error, never a crash."""

import ctypes
import ctypes.util
import os
import shutil
import subprocess

_SONAME = "libmirsearch.so"
_lib = None
_lib_path = None


class LibraryNotFound(OSError):
    """libmirsearch could not be located (the message says where it looked)."""


def _candidates():
    env = os.environ.get("MIRSEARCH_LIB")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    builds = [os.environ.get("MIRSEARCH_BUILDDIR"), os.environ.get("top_builddir"),
              os.path.join(here, "..", "..")]
    for b in builds:
        if b:
            yield os.path.join(b, ".libs", _SONAME)
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "mirsearch"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
        if libdir:
            yield os.path.join(libdir, _SONAME)
    except (OSError, subprocess.SubprocessError):
        pass
    prog = shutil.which("mirsearch")
    if prog:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(prog)))
        for sub in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
            yield os.path.join(prefix, sub, _SONAME)
        # An uninstalled build: src/mirsearch is a libtool wrapper beside .libs.
        yield os.path.join(prefix, ".libs", _SONAME)
    found = ctypes.util.find_library("mirsearch")
    if found:
        yield found


def library_path():
    """The path of the libmirsearch this package uses (loading it first)."""
    lib()
    return _lib_path


c_char_pp = ctypes.POINTER(ctypes.c_char_p)
vp = ctypes.c_void_p
i32 = ctypes.c_int
i64p = ctypes.POINTER(ctypes.c_int64)
LOG_FN = ctypes.CFUNCTYPE(None, vp, ctypes.c_int, ctypes.c_char_p)

# name: (restype, argtypes)
_PROTOS = {
    "mirs_version_string": (ctypes.c_char_p, []),
    "mirs_status_name": (ctypes.c_char_p, [i32]),
    "mirs_context_create": (i32, [ctypes.POINTER(vp)]),
    "mirs_context_destroy": (None, [vp]),
    "mirs_last_error": (ctypes.c_char_p, [vp]),
    "mirs_clear_error": (None, [vp]),
    "mirs_set_log_callback": (None, [vp, LOG_FN, vp]),
    "mirs_diag_count": (ctypes.c_size_t, [vp]),
    "mirs_diag_message": (ctypes.c_char_p, [vp, ctypes.c_size_t]),
    "mirs_option_set": (i32, [vp, ctypes.c_char_p, ctypes.c_char_p]),
    "mirs_option_get": (i32, [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "mirs_free": (None, [vp, vp]),
    "mirs_op_lookup": (i32, [ctypes.c_char_p, ctypes.POINTER(i32)]),
    "mirs_graph_create": (i32, [vp, ctypes.c_char_p, ctypes.POINTER(vp)]),
    "mirs_graph_destroy": (None, [vp]),
    "mirs_graph_add_input": (i32, [vp, ctypes.c_char_p, i32, i32, i64p, ctypes.POINTER(i32)]),
    "mirs_graph_add_op": (i32, [vp, ctypes.c_char_p, i32, i32, ctypes.POINTER(i32),
                                ctypes.POINTER(i32)]),
    "mirs_graph_add_sum": (i32, [vp, ctypes.c_char_p, i32, i32, ctypes.POINTER(i32)]),
    "mirs_graph_mark_output": (i32, [vp, i32]),
    "mirs_graph_name": (ctypes.c_char_p, [vp]),
    "mirs_graph_num_tensors": (i32, [vp]),
    "mirs_graph_num_outputs": (i32, [vp]),
    "mirs_graph_output": (i32, [vp, i32]),
    "mirs_graph_num_ops": (i32, [vp]),
    "mirs_graph_num_custom": (i32, [vp]),
    "mirs_graph_find": (i32, [vp, ctypes.c_char_p]),
    "mirs_tensor_name": (ctypes.c_char_p, [vp, i32]),
    "mirs_tensor_dtype": (i32, [vp, i32]),
    "mirs_tensor_shape": (i32, [vp, i32, i64p]),
    "mirs_tensor_producer": (i32, [vp, i32]),
    "mirs_graph_parse_string": (i32, [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                      ctypes.POINTER(vp)]),
    "mirs_graph_parse_file": (i32, [vp, ctypes.c_char_p, ctypes.POINTER(vp)]),
    "mirs_graph_to_string": (i32, [vp, ctypes.POINTER(vp)]),
    "mirs_graph_write_file": (i32, [vp, ctypes.c_char_p]),
    "mirs_graph_hash": (ctypes.c_uint64, [vp]),
    "mirs_graph_validate": (i32, [vp]),
    "mirs_graph_eval": (i32, [vp, ctypes.c_uint64, ctypes.POINTER(vp)]),
    "mirs_eval_result_destroy": (None, [vp]),
    "mirs_eval_num_outputs": (i32, [vp]),
    "mirs_eval_output_name": (ctypes.c_char_p, [vp, i32]),
    "mirs_eval_output_values": (ctypes.POINTER(ctypes.c_double), [vp, i32, i64p]),
    "mirs_eval_output_shape": (i32, [vp, i32, i64p]),
    "mirs_input_value": (ctypes.c_double, [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_uint64]),
    "mirs_search_create": (i32, [vp, vp, ctypes.POINTER(vp)]),
    "mirs_search_run": (i32, [vp]),
    "mirs_search_destroy": (None, [vp]),
    "mirs_search_num_results": (i32, [vp]),
    "mirs_search_result": (vp, [vp, i32]),
    "mirs_search_result_cost": (ctypes.c_double, [vp, i32]),
    "mirs_search_result_hash": (ctypes.c_uint64, [vp, i32]),
    "mirs_search_result_kernels": (i32, [vp, i32]),
    "mirs_search_report_json": (i32, [vp, i32, ctypes.POINTER(vp),
                                      ctypes.POINTER(ctypes.c_size_t)]),
    "mirs_search_stopped": (i32, [vp]),
    "mirs_search_stop_reason": (ctypes.c_char_p, [vp]),
    "mirs_codegen_cuda": (i32, [vp, ctypes.c_char_p, ctypes.POINTER(vp)]),
    "mirs_codegen_header": (i32, [vp, ctypes.c_char_p, ctypes.POINTER(vp)]),
    "mirs_codegen_emulation_header": (ctypes.c_char_p, []),
    "mirs_codegen_run": (i32, [vp, ctypes.c_uint64, i32, ctypes.POINTER(vp),
                               ctypes.POINTER(ctypes.c_double)]),
    "mirs_codegen_tolerance": (ctypes.c_double, [vp]),
    "mirs_gpu_device_count": (i32, [vp, ctypes.POINTER(i32)]),
}

# Functions that only some libraries have (a newer API); absent ones stay
# unset and the Python side says so when asked for them.
_OPTIONAL = set()


def declare(name, restype, argtypes, optional=True):
    """Declare one more prototype (used by modules binding newer API)."""
    _PROTOS[name] = (restype, argtypes)
    if optional:
        _OPTIONAL.add(name)
    if _lib is not None:
        _bind(_lib, name)


def _bind(handle, name):
    restype, argtypes = _PROTOS[name]
    try:
        fn = getattr(handle, name)
    except AttributeError:
        if name in _OPTIONAL:
            return
        raise
    fn.restype = restype
    fn.argtypes = argtypes


def has(name):
    """Whether the loaded library exports name."""
    return hasattr(lib(), name)


def lib():
    """The loaded library (loaded on first use)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name in _PROTOS:
            _bind(handle, name)
        _lib, _lib_path = handle, path
        return _lib
    raise LibraryNotFound(
        "libmirsearch not found; set MIRSEARCH_LIB to the library file, "
        "MIRSEARCH_BUILDDIR to a build tree, or install mirsearch where pkg-config finds it "
        "(tried: %s)" % ("; ".join(tried) or "nothing"))
