"""A local S3-compatible server for the object-store tests: moto in server mode on 127.0.0.1.

moto answers ``If-None-Match: *`` (the conditional put Lance commits every table
version with) by looking for the object and then writing it, two steps another
request can come between; Amazon S3, MinIO and R2 do both at once. The server
here holds a lock around conditional requests only, so it keeps S3's promise
(one of two writers of the same new version wins, the other is told 412) and
the tests check our code against S3's behaviour rather than moto's race. It
also counts the conditional manifest puts, so a test can see that every commit
was one.

Credentials in the tests are fake and set in the test's environment only;
``AWS_EC2_METADATA_DISABLED`` keeps the AWS chain from asking the network.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "AKIAFAKEFORTESTS0001",
    "AWS_SECRET_ACCESS_KEY": "moto-secret-f7c1d9e4a2b8",  # looked for in saved text
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


class S3Server:
    """moto's S3 on 127.0.0.1 (a free port), with atomic conditional puts."""

    def __init__(self) -> None:
        from moto.moto_server.threaded_moto_server import MotoRequestHandler
        from moto.server import DomainDispatcherApplication, ThreadedMotoServer, create_backend_app
        from werkzeug.serving import make_server

        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.conditional_puts: list[str] = []
        self.plain_manifest_puts: list[str] = []
        lock = threading.Lock()
        outer = self

        def app_with_atomic_conditions(environ: dict[str, Any], start: Any) -> Any:
            app = outer._app
            conditional = environ.get("HTTP_IF_NONE_MATCH") or environ.get("HTTP_IF_MATCH")
            if environ.get("REQUEST_METHOD") == "PUT" and environ.get("PATH_INFO", "").endswith(
                    ".manifest"):
                (outer.conditional_puts if conditional == "*"
                 else outer.plain_manifest_puts).append(environ["PATH_INFO"])
            if conditional:
                with lock:
                    return list(app(environ, start))
            return app(environ, start)

        class Server(ThreadedMotoServer):
            def _server_entry(self) -> None:
                outer._app = DomainDispatcherApplication(create_backend_app)
                self._server = make_server(self._ip_address, self._port,
                                           app_with_atomic_conditions, True,
                                           request_handler=MotoRequestHandler)
                self._server_ready_event.set()
                self._server.serve_forever()

        self._app: Any = None
        self._server = Server(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.options = {"endpoint": self.endpoint, "region": "us-east-1", "allow_http": "true"}

    def client(self) -> Any:
        """A boto3 S3 client on this server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=FAKE_ENV["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=FAKE_ENV["AWS_SECRET_ACCESS_KEY"])

    def bucket(self, name: str) -> str:
        """Create bucket ``name``; returns it."""
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in ``bucket`` under ``prefix``."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                         Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def stop(self) -> None:
        self._server.stop()


@contextmanager
def fake_aws_env() -> Iterator[dict[str, str]]:
    """The fake credentials in ``os.environ`` for the block (restored after)."""
    saved = {k: os.environ.get(k) for k in FAKE_ENV}
    os.environ.update(FAKE_ENV)
    try:
        yield dict(FAKE_ENV)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def serving(bucket: str) -> Iterator[S3Server]:
    """A server with ``bucket`` made, under the fake credentials, stopped after."""
    with fake_aws_env():
        server = S3Server()
        server.bucket(bucket)
        try:
            yield server
        finally:
            server.stop()
