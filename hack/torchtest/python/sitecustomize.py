# Loaded by every Python process the torch test layer starts (PYTHONPATH), never by the product.
#
# Known, not Trainyard's: Debian's torch 1.13 on Python 3.11 crashes in torchrun right after the
# rendezvous ("'NoneType' object has no attribute 'get'"). Std.from_str looks a value up by
# iterating over the IntFlag Std, and since Python 3.11 that iteration skips the zero member NONE
# and the multi-bit alias ALL, so "0" (torchrun's default for --redirects and --tee) maps to
# None. The patch converts with Std(int(v)) instead, once torch's module is imported.
import importlib.abc
import re
import sys

_TARGET = "torch.distributed.elastic.multiprocessing.api"


def _patch(module):
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


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _TARGET:
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
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if sys.version_info >= (3, 11):
    import importlib.util

    sys.meta_path.insert(0, _PatchOnImport())
