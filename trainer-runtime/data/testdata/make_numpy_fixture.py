#!/usr/bin/env python3
"""Writes the NumPy fixtures that data_numpy_test reads back, with numpy's own writers.

Run once (the files are committed; the tests never run Python):

    python3 -m venv /tmp/np && /tmp/np/bin/pip install numpy
    /tmp/np/bin/python trainer-runtime/data/testdata/make_numpy_fixture.py

With base = np.arange(30).reshape(5, 6) (5 examples of 6 values), it writes beside itself, under
numpy/ (the test states these formulas again):

    x_<dtype>.npy      base - 7 as int8, int16, int32, int64; base * 8 as uint8;
                       base * 0.25 - 3 as float32, float64 (numpy.save, version 1.0)
    x_f4_v2.npy        the float32 array in format version 2.0, x_f4_v3.npy in 3.0
    x_f4_3d.npy        the float32 array reshaped to (5, 2, 3)
    y.npy              classes [0, 1, 2, 0, 1] as int64
    data.npz           numpy.savez(x=x_f4_3d, y=y, t=base[:, :2] * 1.5 as float64)
    data_deflated.npz  numpy.savez_compressed of the same
    fortran.npy        base as float32 in Fortran order; big_endian.npy base as >f4 (both refused)
"""
import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent / "numpy"


def main():
    HERE.mkdir(exist_ok=True)
    base = np.arange(30).reshape(5, 6)
    for dtype in ("i1", "i2", "i4", "i8"):
        np.save(HERE / f"x_{dtype}.npy", (base - 7).astype(dtype))
    np.save(HERE / "x_u1.npy", (base * 8).astype("u1"))
    floats = base * 0.25 - 3
    np.save(HERE / "x_f4.npy", floats.astype("<f4"))
    np.save(HERE / "x_f8.npy", floats.astype("<f8"))
    for version in (2, 3):
        with open(HERE / f"x_f4_v{version}.npy", "wb") as f:
            np.lib.format.write_array(f, floats.astype("<f4"), version=(version, 0))
    x3 = floats.astype("<f4").reshape(5, 2, 3)
    np.save(HERE / "x_f4_3d.npy", x3)
    y = np.array([0, 1, 2, 0, 1], dtype="<i8")
    np.save(HERE / "y.npy", y)
    t = (base[:, :2] * 1.5).astype("<f8")
    np.savez(HERE / "data.npz", x=x3, y=y, t=t)
    np.savez_compressed(HERE / "data_deflated.npz", x=x3, y=y, t=t)
    np.save(HERE / "fortran.npy", np.asfortranarray(base.astype("<f4")))
    np.save(HERE / "big_endian.npy", base.astype(">f4"))
    # numpy reads back what it wrote, as a check of the script itself.
    for name in ("data.npz", "data_deflated.npz"):
        with np.load(HERE / name) as z:
            assert (z["x"] == x3).all() and (z["y"] == y).all() and (z["t"] == t).all(), name
    for path in sorted(HERE.iterdir()):
        print(path.name, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
