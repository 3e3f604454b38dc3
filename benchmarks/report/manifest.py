#!/usr/bin/env python3
"""Records what benchmarks/report.sh ran, for render.py: one manifest.json next to the runs' JSON.

    manifest.py FILE init
    manifest.py FILE meta KEY VALUE [KEY VALUE ...]
    manifest.py FILE sweep ID TITLE DESCRIPTION
    manifest.py FILE run --sweep ID --label TEXT --system TEXT [--group TEXT] --file NAME.json
                         --exit CODE [--error TEXT] [--seconds S] -- COMMAND...

The manifest holds "meta" (date, commit, machine, command: text the script measured), "sweeps"
(in the order the report shows them) and "runs" (one entry per row: a run shared by two sweeps,
such as the baseline, appears once in each, with the same file). Standard library only.
"""

import json
import os
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save(path, manifest):
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(temporary, path)


def fail(message):
    print(f"manifest.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_run(arguments):
    if "--" not in arguments:
        fail("run needs -- and the command after its options")
    split = arguments.index("--")
    options, command = arguments[:split], arguments[split + 1:]
    if len(options) % 2 != 0:
        fail(f"run options come in pairs: {options}")
    known = {"--sweep": "sweep", "--label": "label", "--system": "system", "--group": "group",
             "--file": "file", "--exit": "exit", "--error": "error", "--seconds": "seconds"}
    run = {}
    for name, value in zip(options[::2], options[1::2]):
        if name not in known:
            fail(f"unknown run option {name}")
        run[known[name]] = value
    for required in ("sweep", "label", "system", "file", "exit"):
        if required not in run:
            fail(f"run needs --{required}")
    run["exit"] = int(run["exit"])
    if "seconds" in run:
        run["seconds"] = float(run["seconds"])
    run["command"] = command
    return run


def main(argv):
    if len(argv) < 2:
        fail("usage: manifest.py FILE init|meta|sweep|run ...")
    path, action, rest = argv[0], argv[1], argv[2:]
    if action == "init":
        save(path, {"format": 1, "meta": {}, "sweeps": [], "runs": []})
        return
    manifest = load(path)
    if action == "meta":
        if len(rest) % 2 != 0:
            fail("meta takes KEY VALUE pairs")
        for key, value in zip(rest[::2], rest[1::2]):
            manifest["meta"][key] = value
    elif action == "sweep":
        if len(rest) != 3:
            fail("sweep takes ID TITLE DESCRIPTION")
        manifest["sweeps"].append({"id": rest[0], "title": rest[1], "description": rest[2]})
    elif action == "run":
        manifest["runs"].append(parse_run(rest))
    else:
        fail(f"unknown action {action}")
    save(path, manifest)


if __name__ == "__main__":
    main(sys.argv[1:])
