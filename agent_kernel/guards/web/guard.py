"""The network guard: which addresses a model-driven request may connect to.

By default only globally routable unicast addresses pass. Refused: loopback,
private (10/8, 172.16/12, 192.168/16, fc00::/7), shared and reserved ranges,
link-local (169.254/16, fe80::/10) and with it the cloud metadata services
(169.254.169.254, fd00:ec2::254), unspecified and multicast addresses, and
IPv6 forms that carry one of those IPv4 addresses (``::ffff:127.0.0.1``,
6to4, Teredo, NAT64). Names are resolved here, never by the connecting code,
and the verdict is on each resolved address, so every spelling of an address
(``2130706433``, ``0x7f.1``, ``localhost``) meets the same rule.

A person opens holes with an allow-list of host names, addresses or CIDR
blocks, each optionally with a port: ``"localhost:8888"``, ``"10.0.0.0/8"``,
``"[::1]"``, ``"intranet.example"``. A name on the list is trusted for whatever
it resolves to; an address or block is trusted whatever name led there.

This module is pure standard library; :mod:`.client` enforces it at connect time.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``resolver(host, port)`` -> the addresses ``host`` resolves to (text form)."""

METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"),
            ipaddress.ip_address("169.254.170.2"), ipaddress.ip_address("100.100.100.200")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class NetworkRefused(PermissionError):
    """The guard refused to connect; the message says where and why, and how to allow it."""


class LookupFailed(RuntimeError):
    """A host name could not be resolved."""


@dataclass(frozen=True)
class AllowEntry:
    """One allow-list entry: a host name or an address block, and maybe a port."""

    host: str | None
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    port: int | None

    def matches(self, host: str, address: IPAddress, port: int) -> bool:
        """Whether a connection to ``address`` (reached through ``host``) on ``port`` fits."""
        if self.port is not None and self.port != port:
            return False
        if self.host is not None:
            return normal_host(host) == self.host
        return self.network is not None and _version_match(address, self.network) and \
            address in self.network


def _version_match(address: IPAddress,
                   network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> bool:
    return address.version == network.version


def normal_host(host: str) -> str:
    """A host name compared the way DNS compares it: lower case, no trailing dot, no brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


def parse_allow_entry(text: str) -> AllowEntry:
    """One entry (``"10.0.0.0/8"``, ``"localhost:8888"``, ``"[::1]:80"``, ``"api.internal"``);
    ValueError for anything else."""
    raw = text.strip() if isinstance(text, str) else ""
    whole = _is_network(raw)
    if whole is not None:
        return AllowEntry(None, whole, None)
    if not raw or any(c in raw for c in "/?#@ \\"):
        raise ValueError(f"allow-list entry {text!r} is not a host, address or CIDR block "
                         "(like 'localhost:8888', '10.0.0.0/8' or '[::1]')")
    host, port = raw, None
    if raw.startswith("["):
        inside, _, rest = raw[1:].partition("]")
        host = inside
        if rest:
            port = _port(rest.removeprefix(":"), text)
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
        port = _port(port_text, text)
    network = _is_network(host)
    if network is not None:
        return AllowEntry(None, network, port)
    name = normal_host(host)
    if not name or not all(part and len(part) < 64 and part.replace("-", "").replace("_", "")
                           .isalnum() for part in name.split(".")):
        raise ValueError(f"allow-list entry {text!r} is not a host, address or CIDR block "
                         "(like 'localhost:8888', '10.0.0.0/8' or '[::1]')")
    return AllowEntry(name, None, port)


def _is_network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text.strip().strip("[]"), strict=False)
    except ValueError:
        return None


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"allow-list entry {entry!r} has a bad port {text!r} (1-65535)")
    return int(text)


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is internal (``"a loopback address"``...), or None for a public one."""
    inner = embedded_ipv4(address)
    if inner is not None:
        why = refusal_reason(inner)
        return f"{why} written as IPv6" if why else None
    if address in METADATA:
        return "a cloud metadata service address"
    checks = (("is_unspecified", "an unspecified address"), ("is_loopback", "a loopback address"),
              ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"))
    for attribute, why in checks:
        if getattr(address, attribute):
            return why
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private network address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve ``host`` with the system resolver, as a connection would."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class Guard:
    """Decides, per connection, which resolved addresses may be used."""

    def __init__(self, allow: Iterable[str] = (), resolver: Resolver | None = None) -> None:
        self.allow = [parse_allow_entry(entry) for entry in allow]
        self.resolver = resolver or system_resolver

    def verdict(self, host: str, address: str, port: int) -> str | None:
        """None when ``address`` (reached through ``host``) may be connected to, else why not."""
        try:
            parsed = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
        why = refusal_reason(parsed)
        if why is None or any(entry.matches(host, parsed, port) for entry in self.allow):
            return None
        return why

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` that may be connected to, or :class:`NetworkRefused`."""
        name = normal_host(host)
        try:
            found = [str(ipaddress.ip_address(name))]
        except ValueError:
            try:
                found = await self.resolver(name, port)
            except (OSError, UnicodeError) as exc:
                raise LookupFailed(f"cannot resolve host {name!r}: {exc}") from None
        allowed = [a for a in found if self.verdict(name, a, port) is None]
        if allowed:
            return allowed
        if not found:
            raise LookupFailed(f"host {name!r} has no addresses")
        first = found[0]
        raise NetworkRefused(refusal_text(name, first, port, self.verdict(name, first, port)))


def refusal_text(host: str, address: str, port: int, why: str | None) -> str:
    """The refusal as the model and the person read it."""
    where = host if host == address else f"{host} ({address})"
    return (f"network guard refused {where} port {port}: it is {why}. Requests may not reach "
            "this machine, private networks or cloud metadata services; a person can allow a "
            "host with agent_kernel.tools.web.LIMITS.allow_hosts")
