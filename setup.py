"""Packaging for vidlabel; the version lives in vidlabel/_version.py alone."""

from pathlib import Path

from setuptools import find_packages, setup

PROJECT_URL = "https://github.com/vidlabel/vidlabel"

version: dict[str, str] = {}
exec((Path(__file__).parent / "vidlabel" / "_version.py").read_text(), version)

INSTALL_REQUIRES = [
    "numpy>=1.24",
    "h5py>=3.8",
    "hdf5plugin>=4.1",
    "av>=12.0",
    "tqdm>=4.60",
    "zarr>=3.0",
    "fsspec>=2023.6",  # Zarr stores at URLs (vidlabel.store.remote); pure Python, imported only for URLs
    "pycocotools>=2.0.7",
    "defusedxml>=0.7",  # CVAT XML import: no entity expansion, no network
    "simplejpeg>=1.7",
    "google-crc32c>=1.5",  # per-chunk CRC-32C of the store and TFRecord framing; imported, so declared
    "numcodecs>=0.13",  # the store's lz4/zstd/gzip codecs; imported, not only reached through zarr
]
EXTRAS_REQUIRE = {
    # The spec's `vidlabel[video]` (pixels need a decoder): PyAV, which every install already has, decodes them.
    "video": [],
    "torch": ["torch>=2.1"],
    # V2Transform: torchvision's transforms.v2 move boxes and masks with the pixels; pin torch and torchvision
    # together (e.g. torch==2.14.1 torchvision==0.29.1), as torchvision's operators are built for one torch.
    "vision": ["torch>=2.1", "torchvision>=0.17"],
    "dask": ["dask[distributed]>=2024.1"],  # export(executor=...) on a Dask cluster; imported only when used
    "s3": ["s3fs>=2025.2"],  # S3 stores; exports into S3 need its create-only and If-Match writes (fsspec 2025.2)
    "tf": ["protobuf>=4.21"],  # MediaSequence export/import (SequenceExample protos; no TensorFlow)
    # vidlabel view / vidlabel.view(): the local web page's server; imported only then (werkzeug directly too)
    "view": ["flask>=2.2", "werkzeug>=2.2"],
    # the docs site, built offline with `mkdocs build --strict` (docs/, mkdocs.yml)
    "docs": ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings-python>=1.10"],
    "dev": [
        "protobuf>=4.21",
        "tfrecord>=1.14",  # tests: an independent TFRecord / SequenceExample reader
        "pytest>=8",
        "pytest-timeout>=2.2",
        "hypothesis>=6.90",
        "psutil>=5.9",  # tests/services.py: stop the services and their children by PID
        "ruff>=0.6",
        "mypy>=1.10",
        "nbclient>=0.10",
        "nbformat>=5.9",
        "ipykernel>=6.29",
        "matplotlib>=3.8",
        # the real services the tests start on 127.0.0.1 (tests/services.py): an S3 API server and a Dask cluster
        "moto[s3]>=5",
        "flask>=2.2",
        "flask-cors",
        "dask[distributed]>=2024.1",
        "s3fs>=2025.2",
        "obstore>=0.4",
        # the viewer's browser tests drive Chromium (Debian's /usr/bin/chromium; never `playwright install`)
        "playwright>=1.40",
    ],
}

setup(
    name="vidlabel",
    version=version["__version__"],
    description="Annotated videos to training data: exact frames, releases, chunked frame stores, PyTorch loaders.",
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    license_files=["LICENSE"],
    url=PROJECT_URL,
    project_urls={
        "Documentation": f"{PROJECT_URL}/tree/main/docs",
        "Source": PROJECT_URL,
        "Changelog": f"{PROJECT_URL}/blob/main/CHANGELOG.md",
        "Issues": f"{PROJECT_URL}/issues",
    },
    classifiers=[
        "License :: OSI Approved :: MIT License",
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Image Recognition",
        "Typing :: Typed",
    ],
    python_requires=">=3.10",
    packages=find_packages(include=["vidlabel", "vidlabel.*"]),
    # PEP 561: type checkers read vidlabel's own annotations; the viewer's page is served from its package
    package_data={"vidlabel": ["py.typed"], "vidlabel.viewer": ["static/*.html", "static/*.js", "static/*.css"]},
    py_modules=["vidlabel_spec"],
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={
        "console_scripts": ["vidlabel = vidlabel.cli:main"],
        # Zarr loads these only when an array names the codec (vidlabel/store/_zarr_codecs.py)
        "zarr.codecs": [
            "vidlabel.png = vidlabel.store._zarr_codecs:PngCodec",
            "vidlabel.jpeg = vidlabel.store._zarr_codecs:JpegCodec",
        ],
    },
)
