"""The installed distribution's one import name, ``bayesgeom``, over the repository's
top-level folders: ``bayesgeom.<folder>`` is ``<folder>/`` (metadata: pyproject.toml)."""

from setuptools import find_packages, setup

FOLDERS = ("records", "infotheory", "interp", "probes", "windtunnel", "analyses")

setup(
    packages=["bayesgeom", *(f"bayesgeom.{p}" for f in FOLDERS
                             for p in find_packages(include=[f, f + ".*"]))],
    package_dir={"bayesgeom": "bayesgeom", **{f"bayesgeom.{f}": f for f in FOLDERS}},
)
