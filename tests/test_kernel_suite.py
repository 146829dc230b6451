"""The jupyter_kernel_test suite with every optional attribute filled in for Rust."""

import unittest

import jupyter_kernel_test

from conftest import KERNEL_NAME


class GpulabKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME
    language_name = "rust"
    file_extension = ".rs"

    code_hello_world = 'println!("hello, world");'
    code_stderr = 'eprintln!("to stderr");'

    completion_samples = [
        {"text": "let my_long_variable_name = 1;\nmy_long_var", "matches": {"my_long_variable_name"}},
        {"text": "std::collections::HashMa"},
    ]

    complete_code_samples = ["let x = 1;", "fn f() -> i32 { 1 }", ":dep rand", "!nvidia-smi", "1 + 2"]
    incomplete_code_samples = ["fn f() {", "let v = vec![1,\n2,", 'let s = "unterminated', "let x = 1 +"]
    invalid_code_samples = ["fn f() { ) }", "let = ;", "1 + + ;"]

    code_execute_result = [
        {"code": "40 + 2", "result": "42"},
        {"code": '"gpulab".len()', "result": "6"},
        {"code": "vec![1, 2, 3]", "result": "[1, 2, 3]"},
    ]

    code_display_data = [
        {"code": 'display(&Html::new("<b>bold</b>"));', "mime": "text/html"},
        {"code": "display(&Png::new(Mandelbrot::new().size(48, 32).cpu_serial().unwrap().to_png()));", "mime": "image/png"},
    ]

    code_page_something = "?Vec"
    code_inspect_sample = "Vec"

    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = '"gpulab"*'

    code_clear_output = "clear_output();"

    code_generate_error = 'panic!("deliberate failure")'

    # The first cell of a session waits for the prelude to load.
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kc.execute_interactive("1", timeout=300)


if __name__ == "__main__":
    unittest.main()
