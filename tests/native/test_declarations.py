"""native/__init__.py's ctypes declarations against kernels.h, parsed: every struct field (name, order, type) and
every function Python calls (argument and return types). A field or signature changed on one side only fails here,
instead of passing wrong pointers at run time. Needs no compiler and no kernel build."""

from __future__ import annotations

import ctypes
import re

import pytest

from asr_specdec import native
from asr_specdec.native import HERE

HEADER = (HERE / "kernels.h").read_text()
SCALARS = {"int32_t": ctypes.c_int32, "int": ctypes.c_int, "long": ctypes.c_long, "float": ctypes.c_float,
           "size_t": ctypes.c_size_t, "int64_t": ctypes.c_int64}
STRUCTS = {"Linear": native.Linear, "Layer": native.Layer, "Model": native.Model, "Cache": native.Cache}


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def c_type(declaration: str):
    """The ctypes type a C declaration ("const float *", "void *const *", "Linear") must be declared as: a scalar,
    a struct, POINTER(struct) for a pointer to one, c_void_p for another pointer, POINTER(c_void_p) for a pointer
    to pointers."""
    depth = declaration.count("*")
    base = declaration.replace("*", " ").replace("const", " ").split()[0]
    if depth == 0:
        return SCALARS.get(base) or STRUCTS[base]
    if depth == 1:
        return ctypes.POINTER(STRUCTS[base]) if base in STRUCTS else ctypes.c_void_p
    return ctypes.POINTER(ctypes.c_void_p)


def header_structs() -> dict[str, list[tuple[str, object]]]:
    structs = {}
    for body, name in re.findall(r"typedef struct \{(.*?)\}\s*(\w+);", _without_comments(HEADER), flags=re.S):
        if name not in STRUCTS:  # the kernels' own structs
            continue
        fields = []
        for statement in filter(None, (part.strip() for part in body.split(";"))):
            base = re.match(r"((?:const\s+)?\w+)\s*", statement)
            for declarator in statement[base.end():].split(","):
                field = re.findall(r"\w+", declarator)[-1]
                fields.append((field, c_type(f"{base.group(1)} {'*' * declarator.count('*')}")))
        structs[name] = fields
    return structs


def header_functions() -> dict[str, tuple[object, list[object]]]:
    functions = {}
    api = _without_comments(HEADER.split("shared between the kernel files")[0])
    for result, name, arguments in re.findall(r"^(\w+)\s+(\w+)\(([^)]*)\);", api, flags=re.M):
        types = [c_type(re.sub(r"\w+\s*$", "", argument.strip())) for argument in arguments.split(",")
                 if arguments.strip() != "void"]
        functions[name] = (None if result == "void" else SCALARS[result], types)
    return functions


def _kind(declared):
    """Scalars compare by kind and size (c_int is c_int32 here), everything else by identity."""
    if declared is not None and issubclass(declared, ctypes._SimpleCData):
        code = declared._type_
        return (code if code in "fdP" else "u" if code.isupper() else "i", ctypes.sizeof(declared))
    return declared


def _same(declared, expected) -> bool:
    return _kind(declared) == _kind(expected)


@pytest.mark.parametrize("name", sorted(STRUCTS))
def test_every_struct_field_matches_the_header(name):
    expected = header_structs()[name]
    declared = STRUCTS[name]._fields_
    assert [field for field, _ in declared] == [field for field, _ in expected], name
    for (field, kind), (_, wanted) in zip(declared, expected):
        assert _same(kind, wanted), (name, field, kind, wanted)


class _Recorder:
    """Stands in for the loaded library: records what native._declare sets on each function."""

    def __init__(self):
        self.functions = {}

    def __getattr__(self, name):
        return self.functions.setdefault(name, type("Function", (), {})())


def test_every_function_signature_matches_the_header():
    library = native._declare(_Recorder())
    expected = header_functions()
    assert set(library.functions) == set(expected)
    for name, function in library.functions.items():
        result, arguments = expected[name]
        assert _same(function.restype, result), (name, function.restype, result)
        assert len(function.argtypes) == len(arguments), name
        for index, (kind, wanted) in enumerate(zip(function.argtypes, arguments)):
            assert _same(kind, wanted), (name, index, kind, wanted)


def test_the_parser_sees_a_drifted_field_and_signature():
    structs = header_structs()
    assert [field for field, _ in structs["Linear"]][:5] == ["format", "n", "k", "n_tiles", "group"]
    assert structs["Cache"][5] == ("self_k", ctypes.POINTER(ctypes.c_void_p))
    assert not _same(ctypes.c_float, ctypes.c_int32) and not _same(ctypes.c_void_p, ctypes.POINTER(native.Linear))
    assert header_functions()["linear_forward"][1][0] is ctypes.POINTER(native.Linear)
