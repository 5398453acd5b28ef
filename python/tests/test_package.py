"""The package as shipped: the installed copy is typed (py.typed), and a
wheel built with ESBULK_BUNDLE_LIBRARY carries libesbulk.so and loads it
without $ESBULK_LIBRARY. tests/python.test sets ESBULK_PY_SRC (python/ of the
source tree; copied here, never built in place)."""
import glob
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

import esbulk

SRC = os.environ.get("ESBULK_PY_SRC")


def test_installed_package_is_typed():
    d = os.path.dirname(esbulk.__file__)
    assert os.path.exists(os.path.join(d, "py.typed"))
    import inspect
    from esbulk import helpers
    for fn in (esbulk.Indexer.add, esbulk.Indexer.flush, helpers.bulk, helpers.streaming_bulk):
        sig = inspect.signature(fn)
        assert sig.return_annotation is not inspect.Signature.empty, fn


def test_conf_keys_are_the_man_pages():
    """CONF_KEYS (which maps keywords such as result_failures_only) lists
    every key of esbulk-config(7), and only those."""
    if not SRC:
        if os.environ.get("CI") == "true":
            raise RuntimeError("ESBULK_PY_SRC is not set (tests/python.test sets it)")
        pytest.skip("ESBULK_PY_SRC not set")
    from esbulk._conf import CONF_KEYS
    man = os.path.join(SRC, os.pardir, "man", "man7", "esbulk-config.7")
    keys, prev, on = set(), "", False
    with open(man, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith(".SS"):
                on = True
            elif line.startswith(".SH") and on:
                on = False
            elif on and prev == ".TP" and line.startswith(".B "):
                keys.add(line.split()[1])
            prev = line
    assert len(keys) > 40
    assert set(CONF_KEYS) == keys, (sorted(keys - set(CONF_KEYS)), sorted(set(CONF_KEYS) - keys))


def _wheel(tmp_path, bundle):
    if not SRC:
        if os.environ.get("CI") == "true":
            raise RuntimeError("ESBULK_PY_SRC is not set (tests/python.test sets it)")
        pytest.skip("ESBULK_PY_SRC not set")
    src = tmp_path / "src"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__", "libs", "tests", ".mypy_cache"))
    env = dict(os.environ)
    env.pop("ESBULK_BUNDLE_LIBRARY", None)
    if bundle:
        env["ESBULK_BUNDLE_LIBRARY"] = os.environ["ESBULK_LIBRARY"]
    out = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--disable-pip-version-check", "-w", str(out),
                    str(src)], check=True, env=env, cwd=str(tmp_path))
    whl, = glob.glob(str(out / "esbulk-*.whl"))
    return whl


def test_pure_wheel_has_no_library(tmp_path):
    whl = _wheel(tmp_path, bundle=False)
    assert whl.endswith("-py3-none-any.whl"), whl
    names = zipfile.ZipFile(whl).namelist()
    assert "esbulk/py.typed" in names and "esbulk/helpers.py" in names
    assert not [n for n in names if "libs/" in n], names


def test_bundled_wheel_carries_and_loads_the_library(tmp_path):
    whl = _wheel(tmp_path, bundle=True)
    assert "-py3-none-linux_" in os.path.basename(whl), whl
    z = zipfile.ZipFile(whl)
    assert "esbulk/libs/libesbulk.so" in z.namelist()
    site = tmp_path / "site"
    z.extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site))
    env.pop("ESBULK_LIBRARY")  # the wheel's own copy must be found
    out = subprocess.run([sys.executable, "-c",
                          "import esbulk; print(esbulk.library_path()); "
                          "print(esbulk.library_version())"],
                         check=True, env=env, capture_output=True, text=True,
                         cwd=str(tmp_path)).stdout.split()
    assert out[0].startswith(str(site / "esbulk" / "libs")), out
    assert out[1] == esbulk.library_version()
