# Loaded by every Python process the torch test layer starts (PYTHONPATH), never by the product.
# It mends two defects of Debian's torch builds, neither Trainyard's, each where it applies, once
# torch's module is imported:
#
# 1. Debian 12's torch 1.13 on Python 3.11 crashes in torchrun right after the rendezvous
#    ("'NoneType' object has no attribute 'get'"). Std.from_str looks a value up by iterating over
#    the IntFlag Std, and since Python 3.11 that iteration skips the zero member NONE and the
#    multi-bit alias ALL, so "0" (torchrun's default for --redirects and --tee) maps to None. The
#    patch converts with Std(int(v)) instead. torch 2.x converts as the patch does.
# 2. Debian 13's torch 2.6 is built without libuv, which TCPStore asks for by default since torch
#    2.4. The env:// and static paths honour USE_LIBUV=0 (the test sets it for such a build, as its
#    image would), but torchrun's c10d rendezvous constructs its stores without asking, so every
#    torchrun with --rdzv-backend=c10d fails ("use_libuv was requested but PyTorch was build
#    without libuv support"), and so does each worker's env:// store under torchrun. The patch
#    makes TCPStore honour USE_LIBUV, in torch's c10d module and in every module that took it.
import importlib.abc
import importlib.util
import os
import re
import sys


def _std_from_int(module):
    if not sys.modules["torch"].__version__.startswith("1."):
        return
    std = getattr(module, "Std", None)
    if std is None:
        return
    value_re = getattr(module, "_VALUE_REGEX", r"^[0123]$")
    mapping_re = getattr(module, "_MAPPING_REGEX", r"^(\d:[0123],)*(\d:[0123])$")

    def from_str(cls, vm):
        if re.match(value_re, vm):
            return cls(int(vm))
        if re.match(mapping_re, vm):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        raise ValueError(f"{vm} does not match: <{value_re}> or <{mapping_re}>")

    std.from_str = classmethod(from_str)


def _store_honours_use_libuv(_module):
    if os.environ.get("USE_LIBUV") != "0":
        return
    c10d = sys.modules["torch"]._C._distributed_c10d
    base = c10d.TCPStore

    class TCPStore(base):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    c10d.TCPStore = TCPStore
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.distributed") and getattr(module, "TCPStore", None) is base:
            module.TCPStore = TCPStore


_PATCHES = {
    "torch.distributed.elastic.multiprocessing.api": _std_from_int,
    "torch.distributed": _store_honours_use_libuv,
}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


sys.meta_path.insert(0, _PatchOnImport())
