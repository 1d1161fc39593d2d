"""Settings from the environment: every setting has its variable, and a bad value names it."""

import dataclasses

import pytest

from horde.config import VARIABLES, SettingError, Settings


def test_every_setting_has_one_variable_and_no_variable_is_spare():
    assert set(VARIABLES) == {field.name for field in dataclasses.fields(Settings)}
    names = [variable.name for variable in VARIABLES.values()]
    assert len(names) == len(set(names))


def test_unset_and_empty_variables_keep_the_defaults():
    assert Settings.from_env({}) == Settings()
    assert Settings.from_env({variable.name: "" for variable in VARIABLES.values()}) == Settings()


@pytest.mark.parametrize(
    "variable,raw,field,value",
    [
        ("HORDE_IMAGE_FETCH_TIMEOUT_S", "0.5", "image_fetch_timeout_s", 0.5),
        ("HORDE_DEFAULT_JOB_DURATION_S", "42", "default_job_duration_s", 42.0),
        ("HORDE_OAI_KEEPALIVE_S", " 3 ", "oai_keepalive_s", 3.0),
        ("HORDE_MAX_ATTEMPTS", "7", "max_attempts", 7),
        ("HORDE_TRUSTED_PROXY_HOPS", "0", "trusted_proxy_hops", 0),
        ("HORDE_IMAGE_FETCH_ALLOW", "127.0.0.1, example.com,", "image_fetch_allow", ("127.0.0.1", "example.com")),
        ("HORDE_REDIS_URL", "redis://127.0.0.1:6379/0", "redis_url", "redis://127.0.0.1:6379/0"),
        ("HORDE_EVENTS_POLL_S", "0.5", "events_poll_s", 0.5),
        ("HORDE_DATABASE_POOLER", "transaction", "database_pooler", "transaction"),
        ("HORDE_DATABASE_POOLER", "session", "database_pooler", "session"),
    ],
)
def test_each_variable_sets_its_setting(variable, raw, field, value):
    assert getattr(Settings.from_env({variable: raw}), field) == value


@pytest.mark.parametrize(
    "variable,raw,says",
    [
        ("HORDE_OAI_KEEPALIVE_S", "-1", "must be greater than 0"),
        ("HORDE_OAI_KEEPALIVE_S", "0", "must be greater than 0"),
        ("HORDE_JOB_TTL_S", "nan", "must be greater than 0"),
        ("HORDE_OAI_NO_WORKER_GRACE_S", "-0.5", "must be at least 0"),
        ("HORDE_MAX_ATTEMPTS", "0", "must be at least 1"),
        ("HORDE_TRUSTED_PROXY_HOPS", "-1", "must be at least 0"),
        ("HORDE_MAX_BODY_BYTES", "32MiB", "expected an integer"),
        ("HORDE_MAX_MESSAGES", "2.5", "expected an integer"),
        ("HORDE_SWEEP_INTERVAL_S", "soon", "expected a number"),
        ("HORDE_EVENTS_POLL_S", "0", "must be greater than 0"),
        ("HORDE_DATABASE_POOLER", "statement", "must be one of transaction, session"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(variable, raw, says):
    with pytest.raises(SettingError) as refused:
        Settings.from_env({variable: raw})
    assert str(refused.value).startswith(f"{variable}={raw!r}: ")
    assert says in str(refused.value)


def test_overrides_win_over_the_environment():
    settings = Settings.from_env({"HORDE_MAX_ATTEMPTS": "7"}, max_attempts=2)
    assert settings.max_attempts == 2
