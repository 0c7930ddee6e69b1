//! Host values a script builds (strings, lists, tuples, `tolist`, iteration) are bounded like
//! tensors: over `TESSERA_MAX_BYTES` they are E0700 at the expression, never an out-of-memory
//! abort, and what the script printed before is kept. Without the variable the limit follows
//! the process's address-space limit (`ulimit -v`), so a doubling loop under a memory limit
//! stops with E0700 too.

mod common;

use common::{fresh_dir, tessera};

/// Scripts that grow a host value without bound, each with the line the error is at.
const GROWING: &[(&str, &str, u32)] = &[
    (
        "string_doubling",
        "s = 'x'\nn = 0\nwhile True:\n    s = s + s\n    n += 1\n    if n % 10 == 0:\n        print(n, len(s))\n",
        4,
    ),
    ("list_doubling", "x = [1]\nwhile True:\n    x = x + x\n", 3),
    ("tuple_doubling", "x = (1, 2)\nwhile True:\n    x = x + x\n", 3),
    ("fstring_doubling", "s = 'ab'\nwhile True:\n    s = f'{s}{s}'\n", 3),
    (
        "augmented_doubling",
        "s = 'ab'\nwhile True:\n    s += s\n",
        3,
    ),
    ("repeat", "x = [0] * (10 ** 9)\n", 1),
    ("string_repeat", "x = 'ab' * (10 ** 9)\n", 1),
    (
        "join",
        "x = ','.join(['abcd'] * 1000)\ny = '-'.join([x] * 100000)\n",
        2,
    ),
    (
        "replace",
        "s = 'a' * 1000000\nt = s.replace('a', 'b' * 1000)\n",
        2,
    ),
    ("range", "x = list(range(10 ** 9))\n", 1),
    (
        "characters",
        "s = 'a' * 10000000\nn = 0\nfor c in s:\n    n += 1\n",
        3,
    ),
    ("tolist", "x = op.zeros((4000, 4000)).tolist()\n", 1),
    ("tensor_rows", "for r in op.zeros((10 ** 7,)):\n    pass\n", 1),
    (
        "extend_doubling",
        "x = list(range(10 ** 5))\nfor i in range(40):\n    x.extend(x)\n",
        3,
    ),
    (
        "list_augmented_doubling",
        "x = list(range(10 ** 5))\nfor i in range(40):\n    x += x\n",
        3,
    ),
    (
        "slice_assign_doubling",
        "x = list(range(10 ** 5))\nfor i in range(40):\n    x[len(x):] = x\n",
        3,
    ),
    (
        "append_loop",
        "x = list(range(2 * 10 ** 6))\nwhile True:\n    x.append(0)\n",
        3,
    ),
    (
        "insert_loop",
        "x = list(range(2 * 10 ** 6))\nwhile True:\n    x.insert(len(x), 0)\n",
        3,
    ),
    (
        "dict_items",
        "d = {}\nwhile True:\n    d[len(d)] = 0\n",
        3,
    ),
    (
        "dict_update",
        "x = list(range(10 ** 6))\nd = {}\nd.update(zip(x, x))\ne = dict(zip(x, x))\n",
        3,
    ),
    (
        "enumerate",
        "x = list(range(10 ** 6))\ny = list(enumerate(x))\n",
        2,
    ),
    (
        "split",
        "s = 'a,' * 10 ** 7\nx = s.split(',')\n",
        2,
    ),
    (
        "nested_repr",
        "a = [0] * 10 ** 4\nb = [a] * 10 ** 3\nc = [b] * 10 ** 3\nprint(c)\n",
        4,
    ),
    (
        "nested_str",
        "a = [0] * 10 ** 4\nb = [a] * 10 ** 3\nc = {'k': [b] * 10 ** 3}\ns = str(c)\n",
        4,
    ),
    (
        "format_repeat",
        "s = 'x' * 10 ** 7\nt = '{0}{0}{0}{0}{0}{0}{0}{0}'.format(s)\n",
        2,
    ),
    (
        "tensors_in_a_dict",
        "d = {}\nfor i in range(1000):\n    d[i] = op.zeros((10 ** 6,))\n",
        3,
    ),
];

#[test]
fn growing_host_values_are_e0700_at_the_expression() {
    let dir = fresh_dir("host-limits");
    for (name, src, line) in GROWING {
        let path = dir.join(format!("{name}.tsr"));
        std::fs::write(&path, src).unwrap();
        let r = tessera(
            &["run".as_ref(), path.as_os_str()],
            &[("TESSERA_MAX_BYTES", "64M")],
        );
        assert_eq!(r.code, 1, "{name}: exit status\n{}", r.stderr);
        assert!(
            r.stderr.contains("error[E0700]"),
            "{name}: expected E0700\n{}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("{name}.tsr:{line}:")),
            "{name}: expected the error at line {line}\n{}",
            r.stderr
        );
        assert!(!r.stderr.contains("panicked"), "{name}\n{}", r.stderr);
    }
}

#[test]
fn output_before_the_error_is_kept() {
    let dir = fresh_dir("host-limits-output");
    let path = dir.join("doubling.tsr");
    std::fs::write(&path, GROWING[0].1).unwrap();
    let r = tessera(
        &["run".as_ref(), path.as_os_str()],
        &[("TESSERA_MAX_BYTES", "64M")],
    );
    // 2^10 and 2^20 bytes fit under 64 MiB; 2^30 does not
    assert_eq!(r.stdout, "10 1024\n20 1048576\n", "{}", r.stderr);
}

#[test]
fn under_ulimit_v_the_default_limit_stops_a_doubling_loop() {
    let dir = fresh_dir("host-limits-ulimit");
    let path = dir.join("doubling.tsr");
    std::fs::write(&path, GROWING[0].1).unwrap();
    let script = format!(
        "ulimit -v 3000000 && exec '{}' run '{}'",
        env!("CARGO_BIN_EXE_tessera"),
        path.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .env_remove("TESSERA_MAX_BYTES")
        .env("NO_COLOR", "1")
        .output()
        .expect("run sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[E0700]"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("10 1024\n20 1048576\n"),
        "the output before the error is kept"
    );
}
