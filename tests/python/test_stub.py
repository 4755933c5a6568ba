"""python/minfer.pyi, the stub editors read, names everything the module has."""
import ast

import minfer
from conftest import ROOT


def stub_names():
    tree = ast.parse((ROOT / "python" / "minfer.pyi").read_text())
    names = {"": set()}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[""].add(node.name)
            names[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign):
            names[""].add(node.target.id)
        elif isinstance(node, ast.Assign):
            names[""].update(t.id for t in node.targets)
    return names


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_the_stub_names_every_public_name():
    names = stub_names()
    assert public(minfer) - names[""] == set()
    assert "__version__" in names[""]
    for cls in ("Model", "Stream"):
        assert public(getattr(minfer, cls)) - names[cls] == set(), cls
        assert names[cls] - public(getattr(minfer, cls)) - {"__init__", "__iter__", "__next__",
                                                            "__enter__", "__exit__"} == set(), cls
