"""One block-storage cloud per module (``env.py``), and a session per user."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_path = Path(__file__).with_name("env.py")
_spec = importlib.util.spec_from_file_location("cinder_test_env", _path)
env_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(env_module)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    running = env_module.CinderEnv(tmp_path_factory.mktemp("cinder"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def demo(env):
    return env.login("demo")


@pytest.fixture(scope="module")
def admin(env):
    return env.login("admin")
