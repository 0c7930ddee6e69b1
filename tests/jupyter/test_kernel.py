"""The official conformance suite (jupyter_kernel_test) run against the installed kernelspec
`tessera`: every message is validated against the v5 message schema."""

import unittest

# Import the module, not the class: a class imported by name would also be collected and run
# against its default kernel (python3).
import jupyter_kernel_test as jkt


class TesseraKernelTests(jkt.KernelTests):
    kernel_name = "tessera"
    language_name = "tessera"
    file_extension = ".tsr"

    code_hello_world = 'print("hello, world")'

    code_stderr = ""

    completion_samples = [
        {"text": "pri", "matches": {"print"}},
        {"text": "op.matm", "matches": {"matmul"}},
    ]

    complete_code_samples = ["1 + 1", "x = 2", "def f(a):\n    return a\n\n", ":help"]
    incomplete_code_samples = ["def f(a):", "x = [1,", "if True:\n    y = 1"]
    invalid_code_samples = ["x = )", "1 +* 2"]

    code_generate_error = "undefined_name_here"

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "'ab' + 'c'", "result": "'abc'"},
        {"code": "[1, 2][1] * 10", "result": "20"},
    ]

    code_history_pattern = "1?+*"
    supported_history_operations = ("tail", "range", "search")

    code_inspect_sample = "op.matmul"

    code_display_data = [
        {"code": ":help", "mime": "text/html"},
    ]


if __name__ == "__main__":
    unittest.main()
