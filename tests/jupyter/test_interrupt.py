"""Interrupting a running cell stops it; the kernel stays alive with its variables, and the next
cell runs. Also: a failed cell aborts the cells queued behind it, and restart gives a fresh
session."""

import os
import signal
import time


def wait_busy(kc, msg_id, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "busy"):
            return
    raise AssertionError("the cell never started")


def reply_to(kc, msg_id, timeout=20):
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def result_of(kc, code):
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=20)
    assert reply["content"]["status"] == "ok", reply["content"]
    results = [m["content"]["data"]["text/plain"] for m in outputs
               if m["msg_type"] == "execute_result"]
    return results[0] if results else None


def interrupted_loop(km, kc, interrupt):
    assert result_of(kc, "kept = 41") is None
    msg_id = kc.execute("while True: pass")
    wait_busy(kc, msg_id)
    time.sleep(0.3)
    interrupt()
    reply = reply_to(kc, msg_id, timeout=10)
    assert reply["status"] == "error", reply
    assert km.is_alive()
    assert result_of(kc, "kept + 1") == "42"


def test_interrupt_request_stops_the_cell(kernel):
    km, kc = kernel
    assert km.kernel_spec.interrupt_mode == "message"
    interrupted_loop(km, kc, km.interrupt_kernel)


def test_sigint_stops_the_cell_without_killing_the_kernel(kernel):
    km, kc = kernel
    pid = km.provisioner.process.pid
    interrupted_loop(km, kc, lambda: os.kill(pid, signal.SIGINT))


def test_interrupt_while_idle_does_not_affect_the_next_cell(kernel):
    km, kc = kernel
    km.interrupt_kernel()
    time.sleep(0.3)
    assert result_of(kc, "sum([1, 2, 3])") == "6"


def test_failed_cell_aborts_the_queued_cells(kernel):
    km, kc = kernel
    # The first cell runs for a while before failing, so the next two are queued behind it.
    first = kc.execute("t = 0\nfor i in range(300000):\n    t = t + i\nundefined_name")
    second = kc.execute("ran = 1")
    third = kc.execute("ran = 2")
    assert reply_to(kc, first)["status"] == "error"
    assert reply_to(kc, second)["status"] == "aborted"
    assert reply_to(kc, third)["status"] == "aborted"
    # Only what was queued is aborted: the next cell runs.
    reply = kc.execute_interactive("ran = 3", timeout=20)
    assert reply["content"]["status"] == "ok"
    assert result_of(kc, "ran") == "3"


def test_restart_gives_a_fresh_session(kernel):
    km, kc = kernel
    assert result_of(kc, "before_restart = 7") is None
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=30)
    reply = kc.execute_interactive("before_restart", timeout=20)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "E0100"
    assert result_of(kc, "2 * 21") == "42"


def test_shutdown_ends_the_process(kernel):
    km, kc = kernel
    proc = km.provisioner.process
    km.shutdown_kernel(now=False)
    assert proc.wait(timeout=10) == 0
