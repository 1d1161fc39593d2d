"""Test support shared by the test modules: OpenAPI validation, screening helpers."""
