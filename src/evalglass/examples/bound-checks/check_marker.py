"""A deliberately small checker: are the release notes under a target free of the TODO marker?

Exit 0: no marker (accept). Exit 1: a marker is present (investigate). Exit 2: a file is binary, so this checker
cannot read it as prose (it cannot tell). Any other exit would be a fault of the checker itself.
"""

import sys
from pathlib import Path

MARKER = "TODO"


def files_under(target: Path) -> list[Path]:
    return [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())


def main(target: Path) -> int:
    for path in files_under(target):
        data = path.read_bytes()
        if b"\x00" in data:
            print(f"{path.name}: binary content: this checker cannot read it as prose", file=sys.stderr)
            return 2
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if MARKER in line:
                print(f"{path.name}:{number}: marker still present: {line.strip()}", file=sys.stderr)
                return 1
    print("no marker found")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
