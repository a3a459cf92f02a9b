"""The web, seen from the kernel: a network guard, a guarded HTTP client, page readers.

One idea governs it: **an address is judged where the connection is made**.
A URL's host name says nothing about where it points (a public name may
resolve to 127.0.0.1, a redirect may lead to the cloud metadata service), so
:mod:`.guard` resolves every name itself, refuses internal addresses, and
:mod:`.client` connects only to an address the guard has just approved, on
every redirect hop. :mod:`.pages` turns what came back into something a model
can read. The tools that use them are in :mod:`agent_kernel.tools.web`.

Nothing here is imported when the package loads: ``httpx``, ``bs4`` and
``markdownify`` come in with the first web tool call.
"""
