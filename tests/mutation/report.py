"""Summarise the last `mutmut run`: how many mutants the tests killed, which survived, which are equivalent.

An equivalent mutant changes the code without changing what it does, so no test can kill it. They are listed
in `equivalent.txt` beside this file, one per line: `function | mutated line | why`, the function as mutmut
names it without its `__mutmut_N` suffix and the line as `mutmut show` prints it (with its leading `+`
dropped and its indentation stripped), so that the entries survive renumbering when the code changes.

Run from the repository root, with the interpreter mutmut is installed in (`make mutation` does both).
"""

import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

from mutmut.__main__ import SourceFileMutationData, get_diff_for_mutant, walk_mutatable_files
from mutmut.stats import status_by_exit_code

EQUIVALENT = Path(__file__).with_name("equivalent.txt")


def equivalent_mutants() -> Set[Tuple[str, str]]:
    """`(function, mutated line)` of every mutant listed as equivalent."""
    entries = set()
    for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            function, mutated, _why = (part.strip() for part in line.split(" | ", 2))
            entries.add((function, mutated))
    return entries


def mutated_line(name: str, path: Path) -> str:
    """The lines a mutant adds, as `mutmut show` prints them, joined with ` / `."""
    diff = get_diff_for_mutant(name, path=path)
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return " / ".join(added)


def main() -> int:
    statuses: Dict[str, List[str]] = {}
    survivors = []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, exit_code in data.exit_code_by_key.items():
            status = status_by_exit_code[exit_code]
            statuses.setdefault(status, []).append(name)
            if status != "killed":
                survivors.append((name, path, status))
    if not statuses:
        print("No mutation results: run `make mutation`.")
        return 1
    listed = equivalent_mutants()
    equivalent, alive = [], []
    for name, path, status in survivors:
        function = name.rsplit("__mutmut_", 1)[0]
        line = mutated_line(name, path)
        (equivalent if (function, line) in listed else alive).append((name, status, line))
    killed = len(statuses.get("killed", []))
    total = sum(len(names) for names in statuses.values())
    for name, status, line in alive:
        print(f"{status}: {name}\n    {line}")
    score = 100 * killed / max(total - len(equivalent), 1)
    print(f"\n{total} mutants: {killed} killed, {len(alive)} survived, {len(equivalent)} equivalent "
          f"({score:.1f} % of the non-equivalent ones killed)")
    unused = listed - {(name.rsplit("__mutmut_", 1)[0], line) for name, _, line in equivalent}
    for function, line in sorted(unused):
        print(f"equivalent.txt lists a mutant no longer made: {function} | {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
