#!/usr/bin/env python3
"""Fails a CI run whose suites passed fewer tests than their floors in .ci/floors.

A suite whose data, tools or emulator went missing can end green with almost nothing checked:
gtest's skips do not fail ctest, and a node suite that skips is `ok`. This counts the tests that
RAN to a verdict — passed or failed; skipped, disabled and not-run tests do not count — and
compares that with the floor written for the run and suite. (A failure fails ctest or node on its
own; the floor catches the tests that did not run.)

  ci_floor.py ctest RUN JUNIT_XML BUILD_DIR   a ctest run (`ctest --output-junit JUNIT_XML`):
                                              tests per label (the test folder), the labels
                                              read from `ctest --show-only=json-v1` in BUILD_DIR
  ci_floor.py node RUN TAP_FILE               a `node --test` run (`--test-reporter=tap`): the
                                              summary's `# pass` + `# fail`, as suite `all`

Exit 0 when every floor of RUN is met; 1 naming each suite below its floor, a floor's suite that
did not run at all, or a report that is missing; 2 for a usage error.
"""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

FLOORS = Path(__file__).resolve().parent.parent / ".ci" / "floors"


def read_floors(run):
    """{suite: floor} of the lines of .ci/floors whose run list names `run`."""
    floors = {}
    for number, line in enumerate(FLOORS.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if len(line) != 3 or not line[2].isdigit():
            sys.exit(f"[ci_floor] {FLOORS}:{number}: expected 'RUNS SUITE FLOOR', got {line}")
        runs, suite, floor = line
        if run in runs.split(","):
            floors[suite] = int(floor)
    return floors


def ctest_labels(build_dir):
    """{test name: [labels]} of every test ctest knows in build_dir."""
    listing = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                             check=True, capture_output=True, text=True).stdout
    labels = {}
    for test in json.loads(listing)["tests"]:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        labels[test["name"]] = props.get("LABELS", [])
    return labels


def ctest_counts(junit_path, build_dir):
    """{verdict: Counter(label: tests)} of one ctest JUnit report; verdicts: passed, failed,
    skipped (ctest's `notrun`: a gtest skip, or not started) and disabled."""
    labels = ctest_labels(build_dir)
    verdicts = {"run": "passed", "fail": "failed", "notrun": "skipped", "disabled": "disabled"}
    counts = {v: Counter() for v in verdicts.values()}
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        verdict = verdicts.get(case.get("status"), "skipped")
        if verdict == "passed" and case.find("skipped") is not None:
            verdict = "skipped"
        for label in labels.get(case.get("name"), ["(no label)"]):
            counts[verdict][label] += 1
    return counts


def node_counts(tap_path):
    """The same for a node --test TAP report's top-level summary, as suite 'all'."""
    summary = {}
    for line in Path(tap_path).read_text().splitlines():
        m = re.match(r"# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", line)
        if m:
            summary[m.group(1)] = int(m.group(2))  # the last summary (the top level's) wins
    if "pass" not in summary:
        sys.exit(f"[ci_floor] {tap_path}: no '# pass N' summary line (not a node --test TAP report)")
    skipped = sum(summary.get(k, 0) for k in ("cancelled", "skipped", "todo"))
    return {"passed": Counter(all=summary["pass"]), "failed": Counter(all=summary.get("fail", 0)),
            "skipped": Counter(all=skipped), "disabled": Counter()}


def main(argv):
    if len(argv) < 3 or (argv[0], len(argv)) not in (("ctest", 4), ("node", 3)):
        print(__doc__, file=sys.stderr)
        return 2
    kind, run, report = argv[0], argv[1], argv[2]
    floors = read_floors(run)
    if not floors:
        print(f"[ci_floor] {run}: no floor in {FLOORS} names this run", file=sys.stderr)
        return 1
    if not Path(report).is_file():
        print(f"[ci_floor] {run}: the report {report} is missing: the suite did not run",
              file=sys.stderr)
        return 1
    counts = ctest_counts(report, argv[3]) if kind == "ctest" else node_counts(report)
    return check(run, floors, counts)


def check(run, floors, counts):
    """Prints each suite's tests that ran against its floor; 1 when one falls short."""
    below = []
    suites = set(floors).union(*counts.values())
    print(f"[ci_floor] {run}: tests that ran (passed + failed) against each suite's floor")
    for suite in sorted(suites):
        ran = counts["passed"][suite] + counts["failed"][suite]
        floor = floors.get(suite)
        note = "no floor (add one to .ci/floors)" if floor is None else f"floor {floor}"
        if floor is not None and ran < floor:
            note += "  <-- BELOW THE FLOOR"
            below.append(f"{suite}: {ran} ran, floor {floor}")
        print(f"  {suite:<10} ran {ran:>4} (passed {counts['passed'][suite]:>4}, failed "
              f"{counts['failed'][suite]:>3}), skipped {counts['skipped'][suite]:>3}, "
              f"disabled {counts['disabled'][suite]:>2}   {note}")
    if below:
        print(f"[ci_floor] {run}: FAILED, fewer tests ran than expected: {'; '.join(below)}. "
              "Skipped tests do not count: a suite that lost its data, tools or emulator skips. "
              f"If tests were removed on purpose, lower the floor in {FLOORS}.", file=sys.stderr)
        return 1
    print(f"[ci_floor] {run}: every floor met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
