#!/usr/bin/env python3
"""Turns the YCSB sweep of benchmarks/report.sh into a Markdown report with gnuplot charts.

    render.py RUNS_DIR [--out DIR] [--no-charts] [--gnuplot PATH]

RUNS_DIR holds manifest.json (written by manifest.py: the machine, the command, the sweeps and
which run belongs to which row) and the files of `Hyder.Ycsb run --json`. The renderer writes
DIR/ycsb.md and the charts DIR/ycsb/<sweep>-throughput.png and DIR/ycsb/<sweep>-nodes.png (DIR
defaults to RUNS_DIR). Every number in the report comes from those files; nothing is computed
beyond unit conversion.

Without gnuplot on PATH (or with --no-charts) the tables are still written and the report says
that the charts were not drawn. Exit codes: 0 written; 1 written, but gnuplot failed on a chart;
2 bad input (the message names the file). Standard library only.
"""

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# Settings of a run (its JSON "settings" object) that rows compared side by side must share.
SHARED_SETTINGS = [
    ("records", "records"),
    ("keySize", "key bytes"),
    ("valueSize", "value bytes"),
    ("insertOrder", "insert order"),
    ("threads", "threads"),
    ("inFlightPerThread", "in flight per thread"),
    ("warmupSeconds", "warm-up s"),
    ("durationSeconds", "measured s"),
    ("operations", "operations"),
    ("targetThroughput", "target tx/s (0 = unlimited)"),
    ("seed", "seed"),
    ("retries", "retries"),
]

# Numbers of the "target" object a Hyder target adds to each phase; other keys are shown as they come.
TARGET_COLUMNS = [
    ("Servers", "servers", "int"),
    ("Intentions", "intentions melded", "int"),
    ("MeldCommitted", "meld committed", "int"),
    ("MeldAborted", "meld aborted", "int"),
    ("ReadOnlyCommitted", "read-only committed", "int"),
    ("ConflictZone", "conflict zone (mean)", "real"),
    ("FinalMeldConflictZone", "final meld's conflict zone (mean)", "real"),
    ("FinalMeldNodes/Intention", "final meld nodes / intention", "real"),
    ("PremeldNodes/Intention", "premeld nodes / intention", "real"),
    ("GroupMeldNodes/Intention", "group meld nodes / intention", "real"),
    ("AllocatedBytes/Commit", "allocated / commit", "bytes"),
    ("StateHashesAgree", "state hashes agree", "bool"),
]

# The target's numbers each sweep table shows; the Runs section lists all of them.
SWEEP_TARGET_KEYS = ["FinalMeldNodes/Intention", "PremeldNodes/Intention", "GroupMeldNodes/Intention", "ConflictZone",
                     "FinalMeldConflictZone", "StateHashesAgree"]

NODE_STAGES = [
    ("FinalMeldNodes/Intention", "final meld"),
    ("PremeldNodes/Intention", "premeld"),
    ("GroupMeldNodes/Intention", "group meld"),
]

DASH = "–"


class InputError(Exception):
    """Input that cannot be rendered; the message names the file."""


def number(value):
    """A JSON number, or None for anything else (missing keys, strings, booleans)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read it: {e.strerror}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e


def run_phase(path, document):
    """The "run" phase object of a `Hyder.Ycsb run --json` file (an array of phase objects)."""
    if not isinstance(document, list):
        raise InputError(f"{path}: expected the array of phases that `Hyder.Ycsb run --json` writes, found a JSON {type(document).__name__}")
    phases = [p for p in document if isinstance(p, dict) and p.get("phase") == "run"]
    if not phases:
        raise InputError(f"{path}: no phase object with \"phase\": \"run\"")
    phase = phases[-1]
    if not isinstance(phase.get("overall"), dict):
        raise InputError(f"{path}: the run phase has no \"overall\" object")
    for key in ("settings", "series", "aborts", "target"):
        if key in phase and not isinstance(phase[key], dict):
            raise InputError(f"{path}: \"{key}\" of the run phase is not an object")
    return phase


def read_manifest(runs_dir):
    path = os.path.join(runs_dir, "manifest.json")
    if not os.path.exists(path):
        raise InputError(f"{path}: missing (benchmarks/report.sh writes it with manifest.py)")
    manifest = read_json(path)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("runs"), list):
        raise InputError(f"{path}: expected an object with a \"runs\" array")
    for i, run in enumerate(manifest["runs"]):
        if not isinstance(run, dict) or not all(isinstance(run.get(k), str) for k in ("sweep", "label", "system", "file")):
            raise InputError(f"{path}: runs[{i}] needs the strings sweep, label, system and file")
        if os.path.basename(run["file"]) != run["file"]:
            raise InputError(f"{path}: runs[{i}].file must be a file name in {runs_dir}, not a path")
    manifest.setdefault("meta", {})
    manifest.setdefault("sweeps", [])
    return path, manifest


class Row:
    """One row of a sweep: a manifest entry and, unless the run failed, its run phase."""

    def __init__(self, entry, phase):
        self.entry = entry
        self.phase = phase

    @property
    def failed(self):
        return self.phase is None

    @property
    def label(self):
        group = self.entry.get("group")
        return f"{group} · {self.entry['label']}" if group else self.entry["label"]

    def overall(self, key):
        return number(self.phase["overall"].get(key)) if self.phase else None

    def transaction_latency(self, key):
        if not self.phase:
            return None
        series = self.phase.get("series", {}).get("TRANSACTION")
        return number(series.get(key)) if isinstance(series, dict) else None

    def setting(self, key):
        if not self.phase:
            return None
        value = self.phase.get("settings", {}).get(key)
        return value if isinstance(value, str) else None

    def target(self):
        return self.phase.get("target", {}) if self.phase else {}


def load_rows(runs_dir, manifest):
    """Rows by sweep id, in manifest order; every file is read once."""
    phases = {}
    rows = {}
    for entry in manifest["runs"]:
        name = entry["file"]
        if name not in phases:
            path = os.path.join(runs_dir, name)
            exit_code = entry.get("exit", 0)
            if exit_code != 0:
                phases[name] = None
            else:
                phases[name] = run_phase(path, read_json(path))
        rows.setdefault(entry["sweep"], []).append(Row(entry, phases[name]))
    return rows


# ---------------------------------------------------------------------------------------------
# Formatting: numbers as the JSON has them, in the report's units.

def fmt_rate(v):
    if v is None:
        return DASH
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"


def fmt_value(v, kind):
    if v is None:
        return DASH
    if kind == "int":
        return f"{v:,.0f}"
    if kind == "bytes":
        return f"{v / 1024:,.1f} KiB" if abs(v) >= 1024 else f"{v:,.0f} B"
    if kind == "bool":
        return "yes" if v == 1 else ("**no**" if v == 0 else f"{v:g}")
    return f"{v:,.0f}" if float(v).is_integer() and kind == "general" else f"{v:,.1f}"


def fmt_ms(us):
    """Microseconds as milliseconds, down to the microsecond below 1 ms."""
    if us is None:
        return DASH
    ms = us / 1000
    return f"{ms:,.1f}" if ms >= 100 else (f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}")


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers, aligns, rows):
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |",
             "|" + "|".join("---" if a == "l" else "--:" for a in aligns) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return lines


def target_columns(rows):
    """The target numbers some row reports: the known ones in their order, then any others by name."""
    columns = [(k, h, kind) for k, h, kind in TARGET_COLUMNS if any(number(r.target().get(k)) is not None for r in rows)]
    known = {k for k, _, _ in TARGET_COLUMNS}
    extra = sorted({k for r in rows for k, v in r.target().items() if k not in known and number(v) is not None})
    return columns + [(k, k, "general") for k in extra]


def run_link(runs_dir, runs_link, name):
    """A link to a run's JSON, or the bare name when the run left no file."""
    return f"[{name}]({runs_link}/{name})" if os.path.exists(os.path.join(runs_dir, name)) else f"`{name}` (no file)"


def sweep_table(rows, runs_dir, runs_link):
    """Columns every sweep has, plus the pipeline, system and target columns some rows know."""
    groups = any(r.entry.get("group") for r in rows)
    systems = len({r.entry["system"] for r in rows}) > 1
    pipelines = any(r.setting("pipeline") for r in rows)
    gave_up = any((r.overall("GaveUp") or 0) > 0 for r in rows)
    target_keys = sorted((c for c in target_columns(rows) if c[0] in SWEEP_TARGET_KEYS), key=lambda c: SWEEP_TARGET_KEYS.index(c[0]))

    headers, aligns = [], []

    def column(header, align):
        headers.append(header)
        aligns.append(align)

    if groups:
        column("workload", "l")
    column("setting", "l")
    if systems:
        column("system", "l")
    if pipelines:
        column("pipeline (from the run)", "l")
    for header in ("committed tx/s", "aborts (% of attempts)", "transaction p50 ms", "transaction p99 ms"):
        column(header, "r")
    if gave_up:
        column("gave up", "r")
    for _, header, _ in target_keys:
        column(header, "r")
    column("run", "l")

    body, failures = [], []
    for r in rows:
        line = []
        if groups:
            line.append(r.entry.get("group", ""))
        line.append(r.entry["label"])
        if systems:
            line.append(r.entry["system"])
        if pipelines:
            line.append(r.setting("pipeline") or DASH)
        if r.failed:
            line.append(f"failed (exit {r.entry.get('exit')})")
            line += [DASH] * (3 + (1 if gave_up else 0) + len(target_keys))
            failures.append(r)
        else:
            abort = r.overall("AbortRate(%)")
            line += [fmt_rate(r.overall("Committed(tx/sec)")),
                     DASH if abort is None else f"{abort:.2f} %",
                     fmt_ms(r.transaction_latency("50thPercentileLatency(us)")),
                     fmt_ms(r.transaction_latency("99thPercentileLatency(us)"))]
            if gave_up:
                line.append(fmt_value(r.overall("GaveUp"), "int"))
            line += [fmt_value(number(r.target().get(k)), kind) for k, _, kind in target_keys]
        line.append(run_link(runs_dir, runs_link, r.entry["file"]))
        body.append(line)
    lines = markdown_table(headers, aligns, body)
    for r in failures:
        error = r.entry.get("error") or "no message"
        lines.append("")
        lines.append(f"- `{r.entry['file']}` failed with exit code {r.entry.get('exit')}: {error}")
    return lines


def differing_settings(rows):
    """Shared settings that are not the same in every successful row, as text."""
    notes = []
    for key, name in SHARED_SETTINGS:
        values = sorted({r.setting(key) for r in rows if not r.failed and r.setting(key) is not None})
        if len(values) > 1:
            notes.append(f"{name} ({', '.join(values)})")
    return notes


# ---------------------------------------------------------------------------------------------
# Charts

class Charts:
    """Draws PNG charts with the gnuplot scripts next to this file, or says why it does not."""

    def __init__(self, out_dir, gnuplot, disabled):
        self.dir = os.path.join(out_dir, "ycsb")
        self.gnuplot = None if disabled else (gnuplot or shutil.which("gnuplot"))
        if disabled:
            self.reason = "charts were not drawn (`--no-charts`)"
        elif self.gnuplot is None:
            self.reason = "charts were not drawn: gnuplot is not installed (Debian: `apt-get install gnuplot-nox`; benchmarks/report.sh installs it when run as root)"
        else:
            self.reason = None
        self.errors = []
        self.drawn = 0

    @staticmethod
    def _quote(text):
        return "'" + str(text).replace("'", "''") + "'"

    @staticmethod
    def _label(text):
        return str(text).replace("\t", " ").replace("\n", " ")

    def _draw(self, script, name, variables, lines):
        os.makedirs(self.dir, exist_ok=True)
        png = os.path.join(self.dir, name)
        with tempfile.TemporaryDirectory(prefix="hyder-render-") as scratch:
            data = os.path.join(scratch, "data.tsv")
            with open(data, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            variables = dict(variables, datafile=data, outfile=png)
            command = [self.gnuplot]
            for key, value in variables.items():
                rendered = str(value) if isinstance(value, int) else self._quote(value)
                command += ["-e", f"{key}={rendered}"]
            command.append(os.path.join(HERE, script))
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
                message = done.stderr.strip()
                ok = done.returncode == 0 and os.path.exists(png)
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, message = False, str(e)
        if not ok:
            self.errors.append(f"{name}: {message or 'gnuplot wrote no file'}")
            return None
        self.drawn += 1
        return f"ycsb/{name}"

    def bars(self, name, title, ylabel, points):
        """One bar per (label, value)."""
        lines = [f"{self._label(label)}\t{value!r}" for label, value in points]
        return self._draw("bars.gp", name, {"charttitle": title, "ylabel": ylabel}, lines)

    def clusters(self, name, title, ylabel, groups, series, value):
        """Bars clustered by group, one colour per series; value(group, series) may be None."""
        lines = ["\t".join(["group"] + [self._label(s) for s in series])]
        for g in groups:
            cells = [self._label(g)]
            for s in series:
                v = value(g, s)
                cells.append("-" if v is None else repr(v))
            lines.append("\t".join(cells))
        return self._draw("clusters.gp", name, {"charttitle": title, "ylabel": ylabel, "ncolumns": len(series)}, lines)


def sweep_charts(charts, sweep, rows):
    """The throughput chart of a sweep and, where the runs report them, nodes visited per stage."""
    done = [r for r in rows if not r.failed and r.overall("Committed(tx/sec)") is not None]
    images = []
    if not done or charts.reason:
        return images
    title = sweep["title"]
    if any(r.entry.get("group") for r in done):
        groups = list(dict.fromkeys(r.entry.get("group", "") for r in done))
        labels = list(dict.fromkeys(r.entry["label"] for r in done))
        values = {(r.entry.get("group", ""), r.entry["label"]): r.overall("Committed(tx/sec)") for r in done}
        image = charts.clusters(f"{sweep['id']}-throughput.png", f"{title}: committed transactions per second", "committed tx/s",
                                groups, labels, lambda g, s: values.get((g, s)))
    else:
        image = charts.bars(f"{sweep['id']}-throughput.png", f"{title}: committed transactions per second", "committed tx/s",
                            [(r.label, r.overall("Committed(tx/sec)")) for r in done])
    images.append(("committed transactions per second", image))

    stages = [(key, name) for key, name in NODE_STAGES if any(number(r.target().get(key)) is not None for r in done)]
    with_nodes = [r for r in done if any(number(r.target().get(key)) is not None for key, _ in stages)]
    if stages and with_nodes:
        by_label = {r.label: r for r in with_nodes}
        key_of = {name: key for key, name in stages}
        image = charts.clusters(f"{sweep['id']}-nodes.png", f"{title}: nodes visited per intention, by stage", "nodes visited / intention",
                                list(by_label), list(key_of), lambda g, s: number(by_label[g].target().get(key_of[s])))
        images.append(("nodes visited per intention by stage", image))
    return images


# ---------------------------------------------------------------------------------------------
# The report

def meta_line(meta, key, default="unknown"):
    value = meta.get(key)
    return value if isinstance(value, str) and value else default


def header_lines(meta, rows_by_sweep):
    m = lambda key, default="unknown": meta_line(meta, key, default)  # noqa: E731
    lines = [
        "# YCSB: Hyder's meld pipeline, isolation, transaction size, skew and read-only share, and PostgreSQL side by side",
        "",
        "Generated by `benchmarks/report.sh` (`benchmarks/report/render.py` wrote this file from the runs' JSON); do not edit by hand.",
        "",
        f"- Date: {m('date')}, commit `{m('commit')}`",
        f"- Machine: {m('cpu')}, {m('cores')} cores, {m('memory')} RAM; {m('os')}, Linux kernel {m('kernel')}; .NET {m('dotnet')}",
        f"- Load average (1, 5, 15 min) before: {m('loadBefore')}; after: {m('loadAfter')}; the script took {m('elapsed')}",
        f"- Command: `{m('command')}`",
        f"- Hyder target: `{m('hyderTarget')}`; PostgreSQL: {m('postgres', 'not run')}",
    ]
    every = [r for rows in rows_by_sweep.values() for r in rows if not r.failed]
    shared, differ = [], []
    for key, name in SHARED_SETTINGS:
        values = sorted({r.setting(key) for r in every if r.setting(key) is not None})
        if len(values) == 1 and values[0] != "":
            shared.append(f"{name}: {values[0]}")
        elif len(values) > 1:
            differ.append(name)
    if shared:
        lines.append(f"- Every run (from its JSON): {'; '.join(shared)}")
    if differ:
        lines.append(f"- Settings that differ between runs: {', '.join(differ)} (see Runs at the end)")
    if m("mode", "") == "quick":
        lines += ["", "> **Smoke run (`--quick`)**: few records and seconds per run, to check the script; not figures to cite."]
    targets = {r.setting("target") or "" for r in every}
    if any(t.startswith("memory") for t in targets):
        lines += ["", "> **Dry run on `--target memory`**: the Hyder rows come from the YCSB tool's in-process reference target "
                  "(sorted dictionaries behind one lock), which has no meld pipeline: rows that vary the pipeline ran the same "
                  "configuration. These numbers say nothing about Hyder."]
    return lines


HOW_TO_READ = [
    "## How to read this",
    "",
    "Each section varies one setting and keeps the others as its description says. Each row is one run of "
    "`Hyder.Ycsb run --load` (load, warm-up, then the measured window); the run column links its JSON, and a run "
    "that two sections share (the baseline) appears in both with the same file. *Committed tx/s* is the run's "
    "`Committed(tx/sec)` over the measured window. *Aborts* is `AbortRate(%)`: aborted attempts over all attempts "
    "(an aborted transaction is retried up to the run's retries; *gave up*, where shown, counts transactions whose "
    "retries all aborted). *Transaction p50/p99* are percentiles of the `TRANSACTION` series, from the first begin "
    "to the outcome, retries included. The remaining columns are the numbers the Hyder target reports for the "
    "measured window (a dash: the run did not report it; docs/ycsb.md defines each): *nodes / intention* are the "
    "intention and state nodes each pipeline stage visited per melded transaction, *conflict zone* the mean number "
    "of intentions between a transaction's snapshot and its intention, *final meld's conflict zone* what final meld "
    "still melded against after premeld, *state hashes agree* whether every server held the same state hash at the "
    "same log position. Absolute rates belong to the machine stated above; compare the rows of one report.",
]


def render(runs_dir, out_dir, charts):
    manifest_path, manifest = read_manifest(runs_dir)
    rows_by_sweep = load_rows(runs_dir, manifest)
    sweeps = [s for s in manifest["sweeps"] if isinstance(s, dict) and isinstance(s.get("id"), str)]
    declared = {s["id"] for s in sweeps}
    sweeps += [{"id": i, "title": i, "description": ""} for i in rows_by_sweep if i not in declared]
    runs_link = os.path.relpath(runs_dir, out_dir).replace(os.sep, "/")

    lines = header_lines(manifest["meta"], rows_by_sweep)
    if charts.reason:
        lines += ["", f"> Note: {charts.reason}."]
    lines += [""] + HOW_TO_READ
    for sweep in sweeps:
        rows = rows_by_sweep.get(sweep["id"], [])
        lines += ["", f"## {sweep.get('title', sweep['id'])}", ""]
        if sweep.get("description"):
            lines += [sweep["description"], ""]
        if not rows:
            lines.append("No runs.")
            continue
        differ = differing_settings(rows)
        if differ:
            lines += [f"> These rows differ in: {'; '.join(differ)}.", ""]
        lines += sweep_table(rows, runs_dir, runs_link)
        for caption, image in sweep_charts(charts, sweep, rows):
            if image:
                lines += ["", f"![{sweep.get('title', sweep['id'])}: {caption}]({image})"]
            else:
                lines += ["", f"> The chart of {caption} was not drawn: gnuplot failed (render.py printed why)."]

    lines += ["", "## Runs", "",
              f"Each command ran from the repository root; `Hyder.Ycsb.dll` is `tools/Hyder.Ycsb` built with `dotnet build -c Release` "
              f"(the same as `dotnet run -c Release --project tools/Hyder.Ycsb -- <arguments>`). Manifest: `{os.path.basename(manifest_path)}`.", ""]
    seen = {}
    for entry in manifest["runs"]:
        seen.setdefault(entry["file"], []).append(entry)
    for name, entries in seen.items():
        first = entries[0]
        where = ", ".join(dict.fromkeys(e["sweep"] for e in entries))
        seconds = first.get("seconds")
        took = f", {seconds:.0f} s" if isinstance(seconds, (int, float)) else ""
        row = next(r for rows in rows_by_sweep.values() for r in rows if r.entry["file"] == name)
        described = "" if row.failed else f": {row.setting('target') or DASH}; {row.setting('workload') or DASH}"
        lines.append(f"- {run_link(runs_dir, runs_link, name)} ({where}; exit {first.get('exit')}{took}){described}")
        command = first.get("command")
        if isinstance(command, list) and command:
            lines.append(f"  `{shlex.join(str(c) for c in command)}`")
    unique = {}
    for rows in rows_by_sweep.values():
        for r in rows:
            if r.target():
                unique.setdefault(r.entry["file"], r)
    if unique:
        columns = target_columns(list(unique.values()))
        lines += ["", "## The Hyder target's counters by run", "",
                  "Every number of each run's `target` object (the Hyder target's counters over the measured window).", ""]
        lines += markdown_table(["run"] + [h for _, h, _ in columns], ["l"] + ["r"] * len(columns),
                                [[name] + [fmt_value(number(r.target().get(k)), kind) for k, _, kind in columns] for name, r in unique.items()])
    os.makedirs(out_dir, exist_ok=True)
    report = os.path.join(out_dir, "ycsb.md")
    with open(report, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return report, manifest, rows_by_sweep


def main(argv):
    parser = argparse.ArgumentParser(prog="render.py", description="Writes ycsb.md (tables and gnuplot charts) from a YCSB sweep of benchmarks/report.sh.")
    parser.add_argument("runs_dir", help="the folder with manifest.json and the runs' JSON files")
    parser.add_argument("--out", help="where ycsb.md and ycsb/*.png go (default: RUNS_DIR)")
    parser.add_argument("--no-charts", action="store_true", help="write the tables only")
    parser.add_argument("--gnuplot", help="the gnuplot binary (default: gnuplot on PATH)")
    args = parser.parse_args(argv)
    out_dir = args.out or args.runs_dir
    charts = Charts(out_dir, args.gnuplot, args.no_charts)
    try:
        report, manifest, rows_by_sweep = render(args.runs_dir, out_dir, charts)
    except InputError as e:
        print(f"render.py: error: {e}", file=sys.stderr)
        return 2
    rows = sum(len(r) for r in rows_by_sweep.values())
    failed = len({r.entry["file"] for rs in rows_by_sweep.values() for r in rs if r.failed})
    print(f"render.py: wrote {report}: {len(rows_by_sweep)} sweeps, {rows} rows from {len({e['file'] for e in manifest['runs']})} runs"
          f" ({failed} failed), {charts.drawn} charts")
    if charts.reason:
        print(f"render.py: note: {charts.reason}")
    for error in charts.errors:
        print(f"render.py: error: gnuplot failed on {error}", file=sys.stderr)
    return 1 if charts.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
