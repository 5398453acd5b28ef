"""Wheels of esbulk (the metadata is in pyproject.toml).

    pip wheel ./python
        a pure-Python wheel (py3-none-any): libesbulk.so is found at import
        ($ESBULK_LIBRARY, then the system's: `make install`).
    ESBULK_BUNDLE_LIBRARY=/path/to/libesbulk.so pip wheel ./python
        a wheel that carries that libesbulk.so in esbulk/libs/ (where the
        loader looks before the system), tagged for this platform
        (py3-none-linux_x86_64): the library needs no install, its own
        dependencies (libcurl, jansson, libxxhash, zlib) are the system's.
        Not a manylinux wheel: those dependencies are not bundled.
"""
import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    from wheel.bdist_wheel import bdist_wheel  # type: ignore

BUNDLE = os.environ.get("ESBULK_BUNDLE_LIBRARY")


class BuildPy(build_py):
    def run(self):
        super().run()
        libs = os.path.join(self.build_lib, "esbulk", "libs")
        if os.path.isdir(libs):  # never a copy left from an earlier build
            shutil.rmtree(libs)
        if BUNDLE:
            if not os.path.isfile(BUNDLE):
                raise SystemExit("ESBULK_BUNDLE_LIBRARY=%s: no such file" % BUNDLE)
            os.makedirs(libs)
            # the file itself, not a symbolic link (wheels keep none)
            shutil.copyfile(os.path.realpath(BUNDLE), os.path.join(libs, "libesbulk.so"))


class Dist(Distribution):
    def has_ext_modules(self):  # a platform wheel, its files at its root
        return bool(BUNDLE)


class BdistWheel(bdist_wheel):
    def get_tag(self):
        py, abi, plat = super().get_tag()
        if BUNDLE:  # no Python extension: any Python 3, this platform's library
            return "py3", "none", plat
        return py, abi, plat


setup(distclass=Dist, cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
