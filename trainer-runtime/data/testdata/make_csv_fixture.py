#!/usr/bin/env python3
"""Writes the CSV fixtures that data_csv_test reads back, with Python's own csv module.

Run once with any Python 3 (the files are committed; the tests never run Python):

    python3 trainer-runtime/data/testdata/make_csv_fixture.py

python_minimal.csv is csv.writer's default dialect (excel: CRLF line ends, QUOTE_MINIMAL);
python_semicolon.csv is csv.writer(delimiter=";", quoting=csv.QUOTE_NONNUMERIC, lineterminator="\\n").
Both hold the same header and 4 rows, which the test states again:

    header: id, "note, free text", x, y, label
    row i (0 to 3):
      id    = i
      note  = NOTES[i]       (commas, doubled quotes, a line break, UTF-8: never read as numbers)
      x     = X[i]           (repr of a float; row 2's is empty, a missing value)
      y     = -0.5 * i
      label = i % 3
"""
import csv
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
NOTES = ['plain', 'a, comma', 'say "hi"\nthen go', 'caf\u00e9 \u2615']
X = [1.5, 1e-3, None, -2.25e10]
HEADER = ['id', 'note, free text', 'x', 'y', 'label']


def rows():
    for i in range(4):
        yield [i, NOTES[i], '' if X[i] is None else X[i], -0.5 * i, i % 3]


def main():
    with open(HERE / 'python_minimal.csv', 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(rows())
    with open(HERE / 'python_semicolon.csv', 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f, delimiter=';', quoting=csv.QUOTE_NONNUMERIC, lineterminator='\n')
        writer.writerow(HEADER)
        writer.writerows(rows())
    # Python reads back what it wrote, as a check of the script itself.
    for name, kwargs in (('python_minimal.csv', {}), ('python_semicolon.csv', {'delimiter': ';'})):
        with open(HERE / name, newline='', encoding='utf-8') as f:
            read = list(csv.reader(f, **kwargs))
        assert read[0] == HEADER and [r[1] for r in read[1:]] == NOTES, name
        print(name, (HERE / name).stat().st_size, 'bytes')


if __name__ == '__main__':
    main()
