""""Run All" after an error: a client sends every cell at once with `stop_on_error`; when the
first fails, every cell sent before the client could see the error is answered `aborted` and
none of them runs — also the ones still in flight when the kernel drained its queue (the kernel
compares each request's header date with the moment its error reply left). Repeated 50 times,
because the fault this guards against was a timing race. A cell sent after the error reply
runs."""

from test_security import run, value_of


def test_run_all_after_an_error_aborts_every_cell_sent_before_it(kernel):
    km, kc = kernel
    for i in range(50):
        codes = ("undefined_name_xyz", f"ran_{i} = 1", f"ran_also_{i} = 1", "print('no')")
        ids = [kc.execute(code, stop_on_error=True) for code in codes]
        status = {}
        while len(status) < len(ids):
            msg = kc.get_shell_msg(timeout=20)
            status[msg["parent_header"]["msg_id"]] = msg["content"]["status"]
        got = [status[m] for m in ids]
        assert got == ["error", "aborted", "aborted", "aborted"], (i, got)
    # none of the aborted cells ran
    for name in ("ran_0", "ran_also_49"):
        reply, _ = run(kc, name)
        assert reply["status"] == "error" and reply["ename"] == "E0100", reply
    # a cell sent after the client saw the error runs
    assert run(kc, "undefined_again")[0]["status"] == "error"
    assert value_of(kc, "40 + 2") == "42"
