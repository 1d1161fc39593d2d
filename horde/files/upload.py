"""A multipart upload (`POST /v1/files`) streamed into the store while it is counted and checked.

werkzeug's form parser reads the body a piece at a time and hands a file part's bytes to the container its stream
factory makes: here a sink that writes them to the store as they come and refuses the upload the moment it is too
large for HORDE_FILE_MAX_BYTES or for the user's store. The parser's own bounds hold the rest: text fields of at most
FORM_FIELD_MAX_BYTES, at most FORM_MAX_PARTS parts, one file part. Nothing of the file is held but a chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.formparser import FormDataParser

from horde import errors
from horde.files import service
from horde.files.models import StoredFile
from horde.files.parts import FilesParts
from horde.files.store import Writer

#: The text fields of an upload (purpose, expires_after's two) are short; the bound is also that of werkzeug's decoder
#: buffer (a read of 64 KiB and what is left of the one before), which it must pass.
FORM_FIELD_MAX_BYTES = 1024 * 1024
FORM_MAX_PARTS = 8
#: What a multipart body may carry beside its file: the part headers and boundaries, the text fields.
MULTIPART_OVERHEAD_BYTES = FORM_MAX_PARTS * 64 * 1024
MULTIPART = "multipart/form-data"


def body_limit(file_max_bytes: int) -> int:
    """The most bytes an upload's body may hold: the largest file and its form around it."""
    return file_max_bytes + MULTIPART_OVERHEAD_BYTES


@dataclass
class Upload:
    """An upload's text fields and its one file (None when the body had no file part)."""

    fields: dict[str, str]
    file: StoredFile | None
    sink: Sink | None = field(default=None, repr=False)


def receive(
    runtime: FilesParts, user_id: int, stream: IO[bytes], mimetype: str, options: dict[str, str], length: int | None
) -> Upload:
    """Parse the body, writing its file part to the store; the file stays `uploading` until `service.finish`.
    Refused (and whatever was written forgotten): a body that is not multipart, a malformed one, more than one file,
    a file too large for its limit or for the user's store, a text field or a part count above its bound."""
    if mimetype != MULTIPART:
        raise errors.BadRequest(f"An upload is a {MULTIPART} body with the fields 'file' and 'purpose'.", param="file")
    sinks: list[Sink] = []
    used = service.used_bytes(runtime, user_id)
    service.check_room(runtime.settings, used, 0)

    def stream_factory(*, filename: str | None = None, **_: Any) -> IO[bytes]:
        if sinks:
            raise errors.BadRequest("An upload carries one file, in the field 'file'.", param="file")
        sink = Sink(runtime, user_id, filename or "upload.jsonl", used)
        sinks.append(sink)
        return sink  # type: ignore[return-value]  # what the parser calls of a container: write and seek

    parser = FormDataParser(
        stream_factory,  # type: ignore[arg-type]  # keyword-called, as werkzeug calls it
        max_form_memory_size=FORM_FIELD_MAX_BYTES,
        silent=False,
        max_form_parts=FORM_MAX_PARTS,
    )
    try:
        _, form, files = parser.parse(stream, mimetype, length, options)
    except BaseException as error:
        for written in sinks:
            written.forget()
        if isinstance(error, RequestEntityTooLarge):
            raise errors.BadRequest(
                f"An upload's text fields hold at most {FORM_FIELD_MAX_BYTES} bytes each, in at most "
                f"{FORM_MAX_PARTS} parts.",
                param="file",
            ) from None
        if isinstance(error, ValueError):
            raise errors.BadRequest(f"The upload is not a well-formed {MULTIPART} body.", param="file") from None
        raise
    received = sinks[0] if sinks else None
    if received is not None and "file" not in files:
        received.forget()
        raise errors.BadRequest("An upload carries its file in the field 'file'.", param="file")
    return Upload(dict(form.items()), received.file if received else None, received)


class Sink:
    """The container of the file part: counts, checks and writes each piece as it comes."""

    def __init__(self, runtime: FilesParts, user_id: int, filename: str, used: int):
        self.runtime, self.used = runtime, used
        self.forgotten = False
        self.file = service.begin(runtime, user_id, filename)
        self.writer: Writer = service.writer(runtime, self.file)
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        try:
            if self.size > self.runtime.settings.file_max_bytes:
                raise errors.FileTooLarge(
                    f"The file is larger than the limit of {self.runtime.settings.file_max_bytes} bytes.",
                    param="file",
                    headers={"Connection": "close"},
                )
            service.check_room(self.runtime.settings, self.used, self.size)
            self.writer.write(data)
        except BaseException:
            self.forget()
            raise
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        """The parser's end of the part: nothing to rewind, the bytes went to the store."""
        return 0

    def forget(self) -> None:
        """Drop what was written and the file's row (a refused or broken upload); once."""
        if self.forgotten:
            return
        self.forgotten = True
        self.writer.discard()
        service.forget(self.runtime, self.file.id)
