"""Test support shared by the test modules: the e2e harness, native protocol helpers, OpenAPI validation,
screening shapes, fuzzing and a local image server. Test modules import from here, never from a conftest."""
