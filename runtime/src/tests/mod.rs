//! Crate-level tests of the public API: real values, edge cases and errors, one file per
//! family of ops; the helpers they share are here.

mod elementwise;
mod matmul;
mod nn;
mod reductions;
mod robustness;
mod shapes;
mod spectral;

use crate::*;

fn t64(shape: &[usize], v: &[f64], d: DType) -> Tensor {
    Tensor::from_f64(shape, v.to_vec(), d).unwrap()
}
fn ti(shape: &[usize], v: &[i64], d: DType) -> Tensor {
    Tensor::from_i64(shape, v.to_vec(), d).unwrap()
}
fn vals(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}
fn ints(t: &Tensor) -> Vec<i64> {
    t.to_i64_vec().unwrap()
}
fn code(r: Result<Tensor>) -> Code {
    r.unwrap_err().code
}

/// Naive f64 triple loop for `[m,k] @ [k,n]`.
fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum();
        }
    }
    c
}

fn assert_close(got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "element {i}: got {g}, want {w}"
        );
    }
}
