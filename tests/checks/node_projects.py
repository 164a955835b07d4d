"""A Node project whose test reports the checks read, and the box that runs it (fixture)."""

from __future__ import annotations

import shutil

import pytest

NODE_TESTS = """\
import test, { describe, it } from 'node:test';
import assert from 'node:assert/strict';

const add = (a, b) => a - b;

test('adds numbers', () => {
  assert.equal(add(2, 3), 5);
});

test('fine', () => {});

describe('suite', () => {
  it('nested fails', () => {
    throw new Error('nested boom');
  });
  it('nested ok', () => {});
});
"""


node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
