//! `tessera run --profile`: the table of a whole run, aggregated per kernel, shapes and `.tsr`
//! line, with totals, stays short for a training loop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

mod common;

#[test]
fn a_training_loop_prints_a_short_aggregated_profile() {
    let dir = common::fresh_dir("profile-loop");
    // 20 steps of a 2-layer model (the same lines launch the kernels of both layers)
    let src = "\
def loss_fn(w1, w2, x, y):
    h = x
    for w in [w1, w2]:
        h = op.relu(h @ w)
    d = h - y
    return op.sum(d * d)

step = graph.value_and_grad(loss_fn, argnums=(0, 1))
w1 = op.randn((8, 8), seed=1) * 0.1
w2 = op.randn((8, 8), seed=2) * 0.1
x = op.randn((4, 8), seed=3)
y = op.randn((4, 8), seed=4)
for i in range(20):
    loss, (g1, g2) = step(w1, w2, x, y)
    w1 = w1 - 0.1 * g1
    w2 = w2 - 0.1 * g2
print(\"done\")
";
    let path = dir.join("loop.tsr");
    std::fs::write(&path, src).unwrap();
    let r = common::tessera(
        &["run".as_ref(), "--profile".as_ref(), path.as_os_str()],
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "done\n");
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert!(lines.len() <= 60, "{} lines:\n{}", lines.len(), r.stderr);
    let header = lines
        .iter()
        .find(|l| l.starts_with("| op "))
        .expect("a table header");
    let cols: Vec<&str> = header.split('|').map(str::trim).collect();
    for c in [
        "op", "line", "count", "total", "latency", "device", "source",
    ] {
        assert!(cols.contains(&c), "column {c} missing: {header}");
    }
    // the kernels of line 4 (both layers, every step) are one row per kernel and shapes
    let line4: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("| loop.tsr:4 ") && l.contains("| cpu "))
        .collect();
    assert!(!line4.is_empty(), "{}", r.stderr);
    let count_col = cols.iter().position(|c| *c == "count").unwrap();
    let counts: Vec<u32> = line4
        .iter()
        .map(|l| l.split('|').nth(count_col).unwrap().trim().parse().unwrap())
        .collect();
    assert!(
        counts.iter().any(|&n| n >= 40),
        "2 layers x 20 steps merged: {counts:?}\n{}",
        r.stderr
    );
    // totals: one measured row for the cpu, one model row for the target
    let totals: Vec<&&str> = lines.iter().filter(|l| l.starts_with("| total ")).collect();
    assert_eq!(totals.len(), 2, "{}", r.stderr);
    assert!(totals[0].contains("| cpu ") && totals[0].ends_with("| measured |"));
    assert!(totals[1].ends_with("| model    |"), "{}", totals[1]);
    assert!(r.stderr.contains(" moved "), "{}", r.stderr);
}
