"""The child side of ``run_javascript``: one call of model-written JavaScript, one process.

The code a model writes is hostile until shown otherwise, so it never runs in
the kernel. :mod:`agent_kernel.tools.javascript` starts this file as a script
(``python -I -B js_runner.py MEMORY_BYTES CPU_SECONDS MAX_CHARS``), usually
before the call it will serve, so a spare is ready. It limits itself first
(address space, CPU seconds, no files, no new processes), imports the engine
(quickjs-ng: plain ECMAScript, with no ``require``, ``process``, ``fetch``,
``console``, ``std`` or ``os``: nothing reaches outside), reads one request
(``{"code", "input"}`` as JSON) from stdin, writes one answer line to stdout
and exits. Every call gets a fresh process, so nothing one call leaves behind
can reach the next.

It imports nothing of ``agent_kernel``: with ``-I`` the package is not on its
path, and the answer is plain JSON the parent checks.
"""

from __future__ import annotations

import json
import math
import re
import resource
import sys
import time
from typing import Any

MIB = 1024 * 1024
LINE_OFFSET = 2  # ``new Function`` puts the body on the third line of its source
_FRAME = re.compile(r"<input>:(\d+):(\d+)")

# Evaluated once before any model code runs: what it captures (Function, JSON...) stays
# ours even if the code replaces the globals. Strings cross to Python only as JSON text,
# which escapes lone surrogates.
RUNNER_JS = r"""
(function () {
  "use strict";
  const makeFunction = Function, stringify = JSON.stringify, parse = JSON.parse;
  const ErrorType = Error, PromiseType = Promise, MapType = Map, SetType = Set;
  const isArray = Array.isArray, toText = String, WeakMapType = WeakMap;
  class Problem { constructor(text) { this.text = text; } }
  let value, waiting = false, settled = null;

  function describe(thrown) {
    let shown;
    try { shown = typeof thrown === "string" ? stringify(thrown) : toText(thrown); }
    catch (e) { shown = "a value that cannot be shown"; }
    return shown.length > 500 ? shown.slice(0, 500) + "..." : shown;
  }
  function errorInfo(thrown) {
    try {
      if (thrown instanceof ErrorType) {
        return {name: toText(thrown.name), message: toText(thrown.message),
                stack: typeof thrown.stack === "string" ? thrown.stack : ""};
      }
    } catch (e) { /* a hostile getter: describe it from outside */ }
    return {name: "", message: "uncaught " + describe(thrown), stack: ""};
  }
  function answer(fields) { return stringify(fields); }

  function step(path, holder, key) {
    if (isArray(holder)) return path + "[" + key + "]";
    return /^[A-Za-z_$][\w$]*$/.test(key) ? path + "." + key : path + "[" + stringify(key) + "]";
  }
  function serialize() {
    const paths = new WeakMapType();
    let last = "result";
    function check(key, item) {
      const here = key === "" && !paths.has(this) ? "result" : step(paths.get(this), this, key);
      last = here;
      const kind = typeof item;
      if (kind === "bigint") throw new Problem(here + " is a BigInt (" + toText(item) +
        "n), which JSON cannot hold; return String(n) or Number(n)");
      if (kind === "function") throw new Problem(here + " is a function, which JSON " +
        "cannot hold; return data (numbers, strings, arrays, objects)");
      if (kind === "symbol") throw new Problem(here + " is a Symbol, which JSON cannot hold");
      if (kind === "number" && !(item - item === 0)) throw new Problem(here + " is " +
        toText(item) + ", which JSON cannot hold; return null or a string instead");
      if (kind === "undefined" && here === "result") throw new Problem("the code returned " +
        "undefined: end it with an explicit `return <value>`");
      if (item instanceof MapType) throw new Problem(here + " is a Map, which JSON would " +
        "turn into {}; return Object.fromEntries(map) or [...map]");
      if (item instanceof SetType) throw new Problem(here + " is a Set, which JSON would " +
        "turn into {}; return [...set]");
      if (item !== null && kind === "object") paths.set(item, here);
      return item;
    }
    try {
      return answer({ok: true, json: stringify(value, check)});
    } catch (e) {
      if (e instanceof Problem) return answer({ok: false, kind: "result", message: e.text});
      const info = errorInfo(e);
      if (info.name === "TypeError" && /circular/i.test(info.message)) {
        return answer({ok: false, kind: "result", message: "the result is circular: " + last +
          " refers back to an object that contains it; JSON cannot hold cycles"});
      }
      if (info.name === "RangeError") return answer({ok: false, kind: "result", message:
        "the result is nested too deeply to turn into JSON (" + info.message + ")"});
      return answer({ok: false, kind: "serialize", error: info});
    }
  }

  return function (what, text) {
    if (what === "call") {
      let fn;
      try { fn = makeFunction("input", parse(text).code); }
      catch (e) { return answer({ok: false, kind: "compile", error: errorInfo(e)}); }
      try { value = fn(parse(parse(text).input)); }
      catch (e) { return answer({ok: false, kind: "run", error: errorInfo(e)}); }
      if (value instanceof PromiseType) {
        const promise = value;
        value = undefined;
        waiting = true;
        promise.then(v => { settled = {value: v}; }, e => { settled = {error: e}; });
        return answer({ok: true, pending: true});
      }
      return answer({ok: true, pending: false});
    }
    if (!waiting) return serialize();
    if (settled === null) return answer({ok: false, kind: "result", message: "the returned " +
      "Promise never settled (run_javascript has no timers or I/O that could settle it)"});
    if ("error" in settled) {
      return answer({ok: false, kind: "run", error: errorInfo(settled.error)});
    }
    value = settled.value;
    return serialize();
  };
})()
"""


def limit_process(memory_bytes: int, cpu_seconds: float) -> None:
    """The kernel's limits on this process, behind the engine's own (which come first)."""
    cpu = math.ceil(cpu_seconds) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    address_space = 256 * MIB + 3 * memory_bytes  # the interpreter, the engine, one copy out
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def close_doors() -> None:
    """After the engine is imported: no more files opened, no processes started."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (4, 4))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


def located(info: dict[str, Any], code: str) -> str:
    """``SyntaxError: expecting ';' at line 2, column 13`` and that line of the code."""
    name, message = str(info.get("name") or ""), str(info.get("message") or "")
    text = f"{name}: {message}" if name else message
    match = _FRAME.search(str(info.get("stack") or ""))
    if not match:
        return text
    line, column = int(match.group(1)) - LINE_OFFSET, int(match.group(2))
    lines = code.splitlines()
    if not 1 <= line <= max(len(lines), 1):
        return text
    shown = lines[line - 1] if lines else ""
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return f"{text} at line {line}, column {column}\n  {line} | {shown}"


def engine_failure(message: str, memory_bytes: int, cpu_seconds: float) -> str | None:
    """The words for the engine's own limits, or None for any other error."""
    if "interrupted" in message:
        return f"stopped after {cpu_seconds:g} s (the CPU time limit of run_javascript)"
    if "out of memory" in message:
        return f"ran out of memory (limit {memory_bytes // MIB} MiB)"
    return None


def outcome(reply: dict[str, Any], code: str, memory_bytes: int, cpu_seconds: float
            ) -> dict[str, Any]:
    """Turn the runner's reply into the answer: ``{ok, json}`` or ``{ok: false, error}``."""
    if reply.get("ok"):
        return {"ok": True, "json": reply["json"]}
    kind = reply.get("kind")
    if kind == "result":
        return {"ok": False, "error": str(reply.get("message"))}
    info = reply.get("error") or {}
    said = located(info, code)
    if info.get("name") == "InternalError":
        said = engine_failure(str(info.get("message")), memory_bytes, cpu_seconds) or said
    elif "Maximum call stack size exceeded" in str(info.get("message")):
        said += "\n(recursion too deep)"
    if kind == "serialize":
        said = f"the result could not be turned into JSON: {said}"
    return {"ok": False, "error": said}


def run(request: dict[str, Any], memory_bytes: int, cpu_seconds: float) -> dict[str, Any]:
    """Run one request in a fresh engine; every engine failure is an answer, never a raise."""
    import quickjs

    code = request["code"]
    context = quickjs.Context()
    context.set_memory_limit(memory_bytes)
    context.set_max_stack_size(1 * MIB)
    runner = context.eval(RUNNER_JS)
    deadline = time.process_time() + cpu_seconds
    # Only ASCII crosses into the engine: lone surrogates survive as JSON escapes.
    text = json.dumps({"code": code, "input": json.dumps(request.get("input"))})
    try:
        context.set_time_limit(cpu_seconds)
        reply = json.loads(runner("call", text))
        if reply.get("ok"):
            # The engine's clock restarts with each call in; ours does not.
            while True:
                left = deadline - time.process_time()
                if left <= 0:
                    raise quickjs.JSException("InternalError: interrupted")
                context.set_time_limit(left)
                if not context.execute_pending_job():
                    break
            context.set_time_limit(max(deadline - time.process_time(), 0.01))
            reply = json.loads(runner("finish", ""))
    except quickjs.JSException as exc:  # uncatchable: the limits, or a runner undone
        said = engine_failure(str(exc), memory_bytes, cpu_seconds)
        answer = {"ok": False, "error": said or f"the JavaScript engine failed: {exc}"}
    else:
        answer = outcome(reply, code, memory_bytes, cpu_seconds)
    # Out of memory, the engine may not even build its error and throws null instead; by
    # now the memory is freed, so the words name both.
    if not answer["ok"] and answer["error"] == "uncaught null":
        answer["error"] = (f"uncaught null: the code threw null or ran out of memory "
                           f"(limit {memory_bytes // MIB} MiB)")
    return answer


def main(argv: list[str]) -> int:
    """Limit this process, wait for one request, answer it, exit."""
    memory_bytes, cpu_seconds, max_chars = int(argv[1]), float(argv[2]), int(argv[3])
    limit_process(memory_bytes, cpu_seconds)
    import quickjs  # noqa: F401  (imported before the request: that is the spare's head start)

    close_doors()
    out = sys.stdout
    data = sys.stdin.buffer.read()
    if not data:  # the kernel ended before a call came for this spare
        return 0
    try:
        request = json.loads(data)
        answer = run(request, memory_bytes, cpu_seconds)
    except MemoryError:
        answer = {"ok": False, "error": f"ran out of memory (limit {memory_bytes // MIB} MiB)"}
    text = answer.get("json")
    if isinstance(text, str):
        answer["chars"] = len(text)
        if len(text) > max_chars:
            answer["json"], answer["truncated"] = text[:max_chars], True
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
