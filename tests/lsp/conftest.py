"""Fixtures of the server tests: a fresh server per test (see lsp_testing.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from lsp_testing import scaled, start_server, tiny_options

from holefill.lsp.client import RawClient


@pytest_asyncio.fixture
async def raw() -> AsyncIterator[RawClient]:
    """A fresh server, not initialized."""
    client = await start_server()
    yield client
    await client.stop(timeout=scaled(5))


@pytest_asyncio.fixture
async def served(raw: RawClient, tiny_model_dir: Path) -> RawClient:
    """A fresh server, initialized with the tiny random model of tests/conftest.py."""
    await raw.initialize(tiny_options(tiny_model_dir), timeout=scaled(30))
    return raw
