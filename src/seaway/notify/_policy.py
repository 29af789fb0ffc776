"""Where a notification target may deliver, as the operator of the process that runs the plugins
decides (see docs/security.md): file targets only under a directory named at start, webhooks
never to loopback, private, link-local or cloud-metadata addresses unless allowed, and secrets
(webhook keys, credentials and queries in URLs) never shown outside that process."""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.parse
from dataclasses import dataclass
from pathlib import Path, PurePath

from seaway.errors import NotifyConfigError

REDACTED = "(redacted)"
"""What stands for a secret wherever a configuration is shown: give it back unchanged to
:meth:`Notifications.set` to keep the stored secret."""

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT; also some clouds' metadata (100.100.100.200)


@dataclass(frozen=True)
class TargetPolicy:
    """What targets the plugins of this process may write to. The defaults refuse what a client of
    a server could otherwise turn against the server's machine."""

    file_dir: Path | None = None
    """File targets write only under this directory (their path relative to it, or absolute
    inside it; no ``..``, no symbolic links). None: file targets are refused."""
    private_addresses_ok: bool = False
    """Let webhooks reach loopback, private, link-local (cloud metadata) and other non-public
    addresses. Checked on the configured host and again on each address it resolves to at connect
    time."""
    store_dir: Path | None = None
    """The store's data directory: never written into, even where it is under ``file_dir`` (the
    store that runs the plugins sets it)."""


def redact_url(url: str) -> str:
    """``url`` without its credentials and query, each replaced by :data:`REDACTED` (and without
    its fragment): what may be logged or shown."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return REDACTED
    if ":" in host:
        host = f"[{host}]"
    userinfo = f"{REDACTED}@" if "@" in parts.netloc else ""
    query = f"?{REDACTED}" if parts.query else ""
    return f"{parts.scheme}://{userinfo}{host}{port}{parts.path}{query}"


def address_refused(ip: str) -> str | None:
    """Why a webhook may not reach ``ip`` (unless allowed), or None if it may."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata endpoints are there)"
    if address.is_private or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED):
        return "a private address"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "not a public unicast address"
    return None


def check_host(host: str, policy: TargetPolicy) -> None:
    """Refuse a webhook's host given as a literal address the policy does not allow (a name is
    checked on each address it resolves to, when connecting)."""
    if policy.private_addresses_ok:
        return
    try:
        why = address_refused(host.strip("[]"))
    except ValueError:
        return  # a name: see resolve_checked
    if why is not None:
        raise NotifyConfigError(f"a webhook may not reach {host}: {why} (the operator may allow it: "
                                "seaway serve --notify-private-addresses)")


def resolve_checked(host: str, port: int, policy: TargetPolicy) -> list[tuple[int, tuple[str, int]]]:
    """The addresses to connect to for ``host``: refused (:class:`OSError`) if any is one the policy
    does not allow, so that a name cannot point a webhook at one (connect to these addresses, not
    to the name again: it may resolve differently a moment later)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[tuple[int, tuple[str, int]]] = []
    for family, _, _, _, sockaddr in infos:
        ip = str(sockaddr[0])
        why = None if policy.private_addresses_ok else address_refused(ip)
        if why is not None:
            raise OSError(f"refused to connect to {ip}: {why}")
        found.append((family, (ip, int(sockaddr[1]))))
    return found


def connect_checked(host: str, port: int, timeout_s: float, policy: TargetPolicy) -> socket.socket:
    last: OSError = OSError(f"{host} resolved to no address")
    for family, sockaddr in resolve_checked(host, port, policy):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last


def file_target_path(path: str, policy: TargetPolicy) -> Path:
    """The file a file target appends to: ``path`` under the policy's directory, checked (refused
    with :class:`NotifyConfigError`: no directory named, outside it, ``..``, a symbolic link)."""
    if policy.file_dir is None:
        raise NotifyConfigError("file targets are off: the operator names a directory for them when starting "
                                "the server (seaway serve --notify-file-dir DIR) or the store")
    root = Path(os.path.realpath(policy.file_dir))
    given = PurePath(path)
    if given.is_absolute():
        for base in (PurePath(policy.file_dir), root):
            if given.is_relative_to(base):
                given = given.relative_to(base)
                break
        else:
            raise NotifyConfigError(f"a file target writes under {policy.file_dir}: {path!r:.200} is outside it")
    if not given.parts or ".." in given.parts:
        raise NotifyConfigError(f"a file target names a file under {policy.file_dir} without '..': {path!r:.200}")
    full = root / given
    parent = Path(os.path.realpath(full.parent))
    if parent != root and not parent.is_relative_to(root):
        raise NotifyConfigError(f"a file target's directory may not lead out of {policy.file_dir} "
                                f"(a symbolic link): {path!r:.200}")
    if full.is_symlink():
        raise NotifyConfigError(f"a file target may not be a symbolic link: {path!r:.200}")
    if policy.store_dir is not None and parent.is_relative_to(os.path.realpath(policy.store_dir)):
        raise NotifyConfigError(f"a file target may not write into the store's own directory: {path!r:.200}")
    return full


def check_file_dir(file_dir: Path, data_dir: Path) -> None:
    """The directory of file targets is never the store's own, nor inside it."""
    a, b = Path(os.path.realpath(file_dir)), Path(os.path.realpath(data_dir))
    if a.is_relative_to(b):
        raise NotifyConfigError(f"the directory of file targets ({file_dir}) may not be the store's data "
                                f"directory ({data_dir}) or inside it")
