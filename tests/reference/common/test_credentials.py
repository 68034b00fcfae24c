"""The deployment's passwords: generated once, kept 0600, personas documented."""

from __future__ import annotations

import stat
import threading

import pytest

from novalab.reference.common.credentials import (
    PERSONA_PASSWORD,
    Credentials,
    MissingCredentials,
)


def test_ensure_makes_one_secret_password_per_user_in_a_file_only_its_owner_reads(tmp_path):
    credentials = Credentials.of(tmp_path)
    made = credentials.ensure(["admin", "nova", "demo", "alt_demo"])
    assert made == ["admin", "nova"]  # the personas keep the documented password
    mode = stat.S_IMODE((tmp_path / "credentials.json").stat().st_mode)
    assert mode == 0o600
    admin, nova = credentials.password_for("admin"), credentials.password_for("nova")
    assert len({admin, nova, PERSONA_PASSWORD}) == 3 and len(admin) >= 20
    assert credentials.password_for("demo") == PERSONA_PASSWORD
    assert PERSONA_PASSWORD not in (tmp_path / "credentials.json").read_text()


def test_a_second_start_keeps_the_passwords_and_adds_new_users(tmp_path):
    first = Credentials.of(tmp_path)
    first.ensure(["admin"])
    again = Credentials.of(tmp_path)
    assert again.ensure(["admin", "placement"]) == ["placement"]
    assert again.password_for("admin") == first.password_for("admin")


def test_a_holder_sees_a_rotated_password_without_being_rebuilt(tmp_path):
    held = Credentials.of(tmp_path)
    held.ensure(["nova"])
    old = held.password_for("nova")
    Credentials.of(tmp_path).set("nova", "a-new-one-" + "x" * 20)
    assert held.password_for("nova") != old


def test_starters_at_once_agree_on_one_password(tmp_path):
    seen = []

    def start():
        credentials = Credentials.of(tmp_path)
        credentials.ensure(["admin", "nova", "neutron"])
        seen.append(credentials.users())

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8 and all(s == seen[0] for s in seen)


def test_a_host_without_the_file_is_told_what_to_copy(tmp_path):
    with pytest.raises(MissingCredentials, match="credentials.json"):
        Credentials.of(tmp_path).password_for("nova")


def test_a_persona_password_is_not_rotated_through_the_file(tmp_path):
    with pytest.raises(ValueError, match="persona"):
        Credentials.of(tmp_path).set("demo", "whatever")
