"""/v1/files on both databases: uploads streamed into the database or a directory, their bounds (the file, the user's
store, the form), owner-only reads, OpenAI's paging, deletes."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from sqlalchemy import func, select

from horde.files import store
from horde.files.models import FileChunk, StoredFile
from tests.support.batches import bearer, upload, uploaded_id
from tests.support.openapi import validate

#: Over a chunk and a half: the bytes span chunks, the last one partial.
LARGE = bytes(range(256)) * (store.CHUNK_BYTES * 3 // 2 // 256) + b"tail"


@pytest.fixture
def key(make_user):
    return make_user(kudos=10)[1]


def content(client, key: str, file_id: str):
    return client.get(f"/v1/files/{file_id}/content", headers=bearer(key))


def test_an_upload_is_kept_in_chunks_and_read_back_whole(runtime, client, key):
    answer = upload(client, key, LARGE, name="../dir/input.jsonl")
    assert answer.status_code == 200, answer.json
    body = answer.json
    validate(body, "OpenAIFile")
    assert (body["bytes"], body["filename"], body["purpose"], body["status"]) == (
        len(LARGE),
        "input.jsonl",
        "batch",
        "processed",
    )
    assert body["expires_at"] - body["created_at"] == runtime.settings.files_retention_s
    with runtime.db.read() as session:
        chunks = session.scalar(select(func.count()).select_from(FileChunk).where(FileChunk.file_id == body["id"]))
    assert chunks == 2
    read = content(client, key, body["id"])
    assert read.status_code == 200 and read.get_data() == LARGE
    assert int(read.headers["Content-Length"]) == len(LARGE)


def test_an_empty_file_is_kept(client, key):
    file_id = uploaded_id(client, key, b"")
    assert content(client, key, file_id).get_data() == b""


def test_a_directory_keeps_the_bytes_when_set(runtime, client, key, tmp_path):
    runtime.settings = runtime.settings.replace(files_dir=str(tmp_path / "files"))
    file_id = uploaded_id(client, key, LARGE)
    assert (tmp_path / "files" / file_id).read_bytes() == LARGE
    assert not list((tmp_path / "files").glob("*.part"))
    assert content(client, key, file_id).get_data() == LARGE
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(FileChunk)) == 0
    assert client.delete(f"/v1/files/{file_id}", headers=bearer(key)).status_code == 200
    assert not (tmp_path / "files" / file_id).exists()


def test_a_file_above_its_limit_is_refused_and_nothing_is_kept(runtime, client, key):
    runtime.settings = runtime.settings.replace(file_max_bytes=store.CHUNK_BYTES)
    answer = upload(client, key, LARGE)
    assert answer.status_code == 413
    assert answer.json["error"]["code"] == "file_too_large"
    assert answer.headers["Connection"] == "close"
    assert_nothing_kept(runtime)


def test_the_users_store_is_bounded(runtime, client, key, make_user):
    runtime.settings = runtime.settings.replace(file_store_max_bytes=len(LARGE) + 10)
    uploaded_id(client, key, LARGE)
    answer = upload(client, key, b"x" * 11)
    assert (answer.status_code, answer.json["error"]["code"]) == (403, "file_store_full")
    assert answer.json["error"]["metadata"]["used_bytes"] == len(LARGE)
    assert upload(client, key, b"x" * 10).status_code == 200  # exactly at the bound
    assert upload(client, make_user()[1], LARGE).status_code == 200  # another user's store is its own
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(StoredFile)) == 3


def test_an_upload_may_pass_the_body_limit_of_other_routes(runtime, client, key):
    """HORDE_MAX_BODY_BYTES holds for every route but the upload, whose limit is its file's (and its form)."""
    runtime.settings = runtime.settings.replace(max_body_bytes=1024)
    assert upload(client, key, LARGE).status_code == 200
    big_json = client.post("/v1/batches", data=b"{" + b" " * 2048 + b"}", headers=bearer(key))
    assert big_json.status_code == 413


@pytest.mark.parametrize(
    "fields,param",
    [
        ({"purpose": "assistants"}, "purpose"),
        ({"purpose": None}, "purpose"),
        ({"expires_after[anchor]": "now", "expires_after[seconds]": "3600"}, "expires_after.anchor"),
        ({"expires_after[anchor]": "created_at", "expires_after[seconds]": "60"}, "expires_after.seconds"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_the_form_is_screened_and_nothing_kept_on_a_refusal(runtime, client, key, fields, param):
    form = {"purpose": "batch", **fields, "file": (io.BytesIO(b"{}\n"), "a.jsonl")}
    form = {name: value for name, value in form.items() if value is not None}
    answer = client.post("/v1/files", data=form, headers=bearer(key), content_type="multipart/form-data")
    assert answer.status_code == 400 and answer.json["error"]["param"] == param
    assert_nothing_kept(runtime)


def test_expires_after_sets_the_expiry(client, key):
    fields = {"expires_after[anchor]": "created_at", "expires_after[seconds]": "7200"}
    body = upload(client, key, b"{}\n", **fields).json
    assert body["expires_at"] - body["created_at"] == 7200


@pytest.mark.parametrize("files", [0, 2])
def test_an_upload_has_one_file(runtime, client, key, files):
    form = {"purpose": "batch", "file": [(io.BytesIO(b"%d" % n), f"{n}.jsonl") for n in range(files)]}
    answer = client.post("/v1/files", data=form, headers=bearer(key), content_type="multipart/form-data")
    assert answer.status_code == 400 and answer.json["error"]["param"] == "file"
    assert_nothing_kept(runtime)


def test_a_body_that_is_not_multipart_is_refused(client, key):
    answer = client.post("/v1/files", json={"purpose": "batch"}, headers=bearer(key))
    assert answer.status_code == 400 and answer.json["error"]["param"] == "file"


def test_files_are_their_owners_alone(client, key, make_user):
    file_id = uploaded_id(client, key, b"{}\n")
    other = make_user()[1]
    for path in (f"/v1/files/{file_id}", f"/v1/files/{file_id}/content"):
        answer = client.get(path, headers=bearer(other))
        assert (answer.status_code, answer.json["error"]["code"]) == (404, "file_not_found")
    assert client.delete(f"/v1/files/{file_id}", headers=bearer(other)).status_code == 404
    assert client.get(f"/v1/files/{file_id}", headers=bearer(key)).status_code == 200


def test_the_anonymous_user_keeps_no_files(client):
    answer = upload(client, "0000000000", b"{}\n")
    assert (answer.status_code, answer.json["error"]["code"]) == (403, "AnonForbidden")


def test_the_list_pages_as_openai_pages_it(client, key):
    ids = [uploaded_id(client, key, f"{n}\n".encode()) for n in range(5)]
    newest_first = client.get("/v1/files?limit=2", headers=bearer(key)).json
    validate(newest_first, "ListFilesResponse")
    assert [file["id"] for file in newest_first["data"]] == ids[::-1][:2]
    assert newest_first["has_more"] and newest_first["last_id"] == ids[3]
    rest = client.get(f"/v1/files?limit=10&after={ids[3]}", headers=bearer(key)).json
    assert [file["id"] for file in rest["data"]] == ids[::-1][2:] and not rest["has_more"]
    oldest_first = client.get("/v1/files?order=asc&limit=3", headers=bearer(key)).json
    assert [file["id"] for file in oldest_first["data"]] == ids[:3]
    assert client.get("/v1/files?limit=0", headers=bearer(key)).status_code == 400
    assert client.get("/v1/files?order=sideways", headers=bearer(key)).status_code == 400


def test_a_delete_removes_the_file_and_its_chunks(runtime, client, key):
    file_id = uploaded_id(client, key, LARGE)
    answer = client.delete(f"/v1/files/{file_id}", headers=bearer(key))
    assert answer.json == {"id": file_id, "object": "file", "deleted": True}
    validate(answer.json, "DeleteFileResponse")
    assert client.get(f"/v1/files/{file_id}", headers=bearer(key)).status_code == 404
    assert_nothing_kept(runtime)


def assert_nothing_kept(runtime) -> None:
    with runtime.db.read() as session:
        assert session.scalar(select(func.count()).select_from(StoredFile)) == 0
        assert session.scalar(select(func.count()).select_from(FileChunk)) == 0
    files_dir = runtime.settings.files_dir
    assert files_dir is None or not list(Path(files_dir).iterdir())


def test_an_upload_of_many_reads_passes_the_form_parser_bounds(client, key):
    """Thousands of short lines over many reads of the parser: its buffer stays within its bound."""
    data = b"".join(b'{"custom_id": "l%06d", "n": %d}\n' % (n, n) for n in range(20_000))
    file_id = uploaded_id(client, key, data)
    assert content(client, key, file_id).get_data() == data
