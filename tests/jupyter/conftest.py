"""Shared setup of the Jupyter tests: the kernelspec `tessera` must be installed in a private
prefix named by JUPYTER_PATH (scripts/jupyter-test does it), never in the user's own Jupyter."""

import os

import pytest
from jupyter_client.kernelspec import KernelSpecManager


def pytest_configure(config):
    spec = KernelSpecManager().get_kernel_spec("tessera")
    assert os.environ.get("JUPYTER_PATH"), "set JUPYTER_PATH to the private kernelspec prefix"
    assert spec.resource_dir.startswith(os.environ["JUPYTER_PATH"].split(os.pathsep)[0]), (
        f"the tessera kernelspec in use ({spec.resource_dir}) is not the private one"
    )


@pytest.fixture
def kernel():
    """A fresh kernel and a started blocking client; shut down afterwards."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="tessera")
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
