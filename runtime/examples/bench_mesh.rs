//! Local mesh benchmark: a 2048³ f32 matmul with `A`'s rows split over 4 local devices (one
//! worker thread each, `B` replicated and shared) against the unsharded matmul, on the same
//! cores. Prints the median of each over interleaved runs.
//!
//! `cargo run --release -p tessera-runtime --example bench_mesh [N] [DEVICES] [REPEATS]`

use std::sync::Arc;
use std::time::Instant;

use tessera_runtime::mesh::{per_device, Layout, Mesh, Sharded};
use tessera_runtime::{matmul, DType, Result, Tensor};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(2048);
    let devices = args.get(1).copied().unwrap_or(4);
    let repeats = args.get(2).copied().unwrap_or(7);
    let a = Tensor::randn(&[n, n], DType::F32, 1)?;
    let b = Tensor::randn(&[n, n], DType::F32, 2)?;
    let mesh = Arc::new(Mesh::new(vec!["tp".into()], vec![devices], None)?);
    let rows = Layout {
        dims: vec![Some(0), None],
        partial: None,
    };
    let sa = Sharded::split(&a, rows, mesh.clone())?;
    let sb = Sharded::split(&b, Layout::replicated(2), mesh.clone())?;
    let (mut full, mut sharded) = (Vec::new(), Vec::new());
    // Warm-up, and a check that the sharded result is the unsharded one, bit for bit.
    let want = matmul(&a, &b, None)?;
    let got = per_device(mesh.size(), false, |r| {
        matmul(&sa.shards[r], &sb.shards[r], None)
    })?;
    let rows_per = n / devices;
    let w = want.to_f32_vec()?;
    for (r, g) in got.iter().enumerate() {
        assert_eq!(
            g.to_f32_vec()?,
            w[r * rows_per * n..(r + 1) * rows_per * n].to_vec(),
            "shard {r} differs"
        );
    }
    for _ in 0..repeats {
        let t = Instant::now();
        let c = matmul(&a, &b, None)?;
        full.push(t.elapsed().as_secs_f64());
        drop(c);
        let t = Instant::now();
        let c = per_device(mesh.size(), false, |r| {
            matmul(&sa.shards[r], &sb.shards[r], None)
        })?;
        sharded.push(t.elapsed().as_secs_f64());
        drop(c);
    }
    let (f, s) = (median(full), median(sharded));
    let flops = 2.0 * (n as f64).powi(3);
    println!(
        "matmul {n}^3 f32, {} threads in the pool",
        rayon::current_num_threads()
    );
    println!(
        "unsharded:             median {:.1} ms ({:.1} GFLOP/s)",
        f * 1e3,
        flops / f / 1e9
    );
    println!(
        "rows split, {devices} devices: median {:.1} ms ({:.1} GFLOP/s)",
        s * 1e3,
        flops / s / 1e9
    );
    println!("sharded / unsharded speed: {:.3}", f / s);
    Ok(())
}
