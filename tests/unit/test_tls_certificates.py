"""Warnings about the node's own certificate at start: expired, not yet valid, soon to
expire, self-signed (TLS works with each; clients that verify the node will not)."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from worker.io.tls import certificate_warnings

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl command")
DAY = 86400.0


def openssl(cwd: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "self.key", "-out",
            "self.pem", "-days", "30", "-subj", "/CN=self-signed node")
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.pem", "-days", "30", "-subj", "/CN=test CA")
    openssl(d, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out",
            "node.csr", "-subj", "/CN=node")
    openssl(d, "x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.pem", "-days", "30")
    return d


def test_a_ca_signed_certificate_in_its_time_gives_no_warning(certs: Path) -> None:
    assert certificate_warnings(str(certs / "node.pem"), time.time()) == []


def test_a_self_signed_certificate_is_named(certs: Path) -> None:
    [problem] = certificate_warnings(str(certs / "self.pem"), time.time())
    assert problem.startswith("self-signed")


def test_expired_soon_to_expire_and_not_yet_valid(certs: Path) -> None:
    node = str(certs / "node.pem")
    [expired] = certificate_warnings(node, time.time() + 31 * DAY)
    assert expired.startswith("expired on ")
    [soon] = certificate_warnings(node, time.time() + 20 * DAY)
    assert soon.startswith("expires on ")
    [early] = certificate_warnings(node, time.time() - DAY)
    assert early.startswith("not valid before ")


def test_an_unreadable_file_gives_no_warning(tmp_path: Path) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate")
    assert certificate_warnings(str(tmp_path / "junk.pem"), time.time()) == []
