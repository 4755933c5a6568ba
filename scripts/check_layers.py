#!/usr/bin/env python3
"""Fails when a source file includes a header its layer may not use (DESIGN.md §2).

Each rule names the files it covers (a path prefix), the header folders they must not include
("#include "kernels/..."" etc.) and, optionally, files under the prefix that the rule leaves
alone. A violation prints file:line and the rule it breaks.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The source folders, each a layer of DESIGN.md §2 (src/<folder>/): "core/", "engine/", ….
SRC_FOLDERS = tuple(sorted(f"{d.name}/" for d in (ROOT / "src").iterdir() if d.is_dir()))
# What the apps layer (apps/, src/server/) must not include: every source folder but core/ and the
# server's own. Their engine is its public headers, include/minfer/ (minfer.h, tools.h).
NOT_FOR_APPS = tuple(f for f in SRC_FOLDERS if f not in ("core/", "server/"))
APPS_WHY = ("DESIGN §2: the apps \"may use: engine (its public header), core\": include minfer/… "
            "and core/, not the layers behind the public API")
# The commands that run the HTTP server, itself in the apps layer (src/server/).
SERVER_COMMANDS = ("apps/minfer/cmd_serve.cpp", "apps/minfer/cmd_viz.cpp")

# (files under, forbidden include folders, why[, files under it the rule leaves alone])
RULES = [
    ("apps/", NOT_FOR_APPS, APPS_WHY),
    ("apps/", ("server/",), "only serve and viz run the server (src/server/)", SERVER_COMMANDS),
    ("src/server/", NOT_FOR_APPS, APPS_WHY),
    ("src/models/", ("kv/", "engine/", "server/"),
     "a model describes config, weights and graph; the runtime owns the KV cache"),
    ("src/kernels/", ("graph/", "kv/", "models/", "engine/", "server/"),
     "kernels know only quant and core"),
    ("src/graph/", ("models/", "engine/", "server/"), "the graph layer is below the models"),
    ("src/kv/", ("graph/", "models/", "engine/", "server/"), "the KV cache is below the graph"),
    ("src/quant/", ("kernels/", "graph/", "kv/", "models/", "engine/", "server/"),
     "quant formats know only core"),
    ("src/core/", ("quant/", "gguf/", "kernels/", "graph/", "kv/", "models/", "engine/",
                   "server/", "tokenizer/", "chat/", "sampling/", "grammar/"),
     "core is the bottom layer"),
    ("src/engine/", ("server/",), "the engine is below the server"),
    ("src/hub/", ("kernels/", "graph/", "kv/", "models/", "engine/", "server/", "tokenizer/",
                  "chat/", "sampling/", "grammar/", "tools/"),
     "the model source (Hub, Ollama store) finds files: it knows only gguf and core"),
]
# Commands that are clients of the generation API alone (include/minfer/minfer.h): from the tree
# they may include only minfer/ and the app's own headers, not even core/.
for command in ("apps/minfer/cmd_run.cpp", "apps/minfer/cmd_chat.cpp",
                "apps/minfer/generation_flags.h", "apps/minfer/observe_options.h", "examples/"):
    RULES.append((command, SRC_FOLDERS,
                  "a client of the public API: include minfer/minfer.h, not the engine"))
# The Python module binds the public API (minfer/minfer.h, minfer/tools.h and the core/status.h
# they use), nothing behind it.
RULES.append(("python/", tuple(f for f in SRC_FOLDERS if f != "core/"),
              "the Python module binds the public API: include minfer/…, not the engine"))
RULES.append(("apps/minfer/cmd_serve.cpp", tuple(f for f in SRC_FOLDERS if f != "server/"),
              "serve runs the server (src/server/) on the public API alone"))

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main() -> int:
    violations = []
    n_files = 0
    for path in sorted(ROOT.glob("**/*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.suffix not in (".h", ".cpp") or rel.startswith(("build", "third_party")):
            continue
        rules = [r[:3] for r in RULES
                 if rel.startswith(r[0]) and (len(r) < 4 or rel not in r[3])]
        if not rules:
            continue
        n_files += 1
        for line_no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            for prefix, forbidden, why in rules:
                if m.group(1).startswith(forbidden):
                    violations.append(f"{rel}:{line_no}: includes \"{m.group(1)}\": {why}")
    for v in violations:
        print(v)
    print(f"layers: {n_files} files checked, {len(violations)} forbidden includes")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
