"""Test helpers shipped with tilefuse: random program generators for property tests."""
