import socket

import pytest
from conftest import NetworkAccessError


def test_guard_refuses_public_address() -> None:
    with pytest.raises(NetworkAccessError), socket.socket() as sock:
        sock.connect(("93.184.216.34", 80))


def test_guard_refuses_private_range_and_names() -> None:
    with pytest.raises(NetworkAccessError), socket.socket() as sock:
        sock.connect(("10.0.0.1", 80))
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("api.openai.com", 443)


def test_guard_allows_loopback() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.socket() as client:
            client.connect(server.getsockname())
