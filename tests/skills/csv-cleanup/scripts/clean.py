"""Applies the cleaning rules of references/rules.md to a CSV file (reads stdin, writes stdout)."""
import csv
import sys


def main() -> None:
    rows = list(csv.reader(sys.stdin))
    if not rows:
        return
    header = ["_".join(cell.strip().lower().split()) for cell in rows[0]]
    seen = set()
    out = csv.writer(sys.stdout)
    out.writerow(header)
    for row in rows[1:]:
        cells = tuple(" ".join(cell.split()) for cell in row)
        if cells not in seen:
            seen.add(cells)
            out.writerow(cells)


if __name__ == "__main__":
    main()
