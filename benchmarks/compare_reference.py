"""The reference for case 8: plain Python reads two scores files and prints the mean paired difference of `exact`.

    python benchmarks/compare_reference.py BASE_SCORES CAND_SCORES

Only scored, valid values (bare numbers in the block format) are paired; everything else is left out.
"""

import json
import sys


def values_by_id(path):
    found = {}
    with open(path, "rb") as handle:
        for line in handle:
            block = json.loads(line)
            for example_id, value in zip(block["ids"], block["scores"]["exact"], strict=False):
                if isinstance(value, float):
                    found[example_id] = value
    return found


def main():
    base = values_by_id(sys.argv[1])
    total = 0.0
    pairs = 0
    with open(sys.argv[2], "rb") as handle:
        for line in handle:
            block = json.loads(line)
            for example_id, value in zip(block["ids"], block["scores"]["exact"], strict=False):
                before = base.get(example_id)
                if before is not None and isinstance(value, float):
                    total += value - before
                    pairs += 1
    print(repr(total / pairs))


main()
