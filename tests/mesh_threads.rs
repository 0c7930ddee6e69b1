//! Results on a mesh are the same bits whether each device runs on its own worker thread or
//! all run on one thread (`TESSERA_MESH_THREADS=1`), and across repeated runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support code

use std::process::Command;

const SCRIPT: &str = r#"
A = op.randn((64, 96), seed=1)
B = op.randn((96, 48), seed=2)
for n in [1, 2, 4, 8]:
    mesh = dist.Mesh(axes=["tp"], shape=(n,))
    cols = dist.ShardSpec(partition=("col",), mesh_axes=("tp",))
    rows = dist.ShardSpec(partition=("row",), mesh_axes=("tp",))
    P = dist.shard(A, cols, mesh) @ dist.shard(B, rows, mesh)
    S = op.sum(dist.shard(A, cols, mesh), axis=1)
    print(dist.gather(P).tolist())
    print(dist.gather(S).tolist())
    print(dist.gather(op.softmax(P, axis=0)).tolist())
"#;

fn run(threads: Option<&str>) -> String {
    let dir = std::env::temp_dir().join(format!("tessera-mesh-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mesh.tsr");
    std::fs::write(&path, SCRIPT).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.arg("run").arg(&path);
    match threads {
        Some(t) => c.env("TESSERA_MESH_THREADS", t),
        None => c.env_remove("TESSERA_MESH_THREADS"),
    };
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn mesh_results_do_not_depend_on_threads() {
    let threaded = run(None);
    assert!(threaded.lines().count() == 12, "{threaded}");
    assert_eq!(
        threaded,
        run(Some("1")),
        "one thread vs one thread per device"
    );
    assert_eq!(threaded, run(None), "two runs");
}
