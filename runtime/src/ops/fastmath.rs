//! A vectorisable f32 `exp` and the fused softmax row kernel built on it.
//!
//! The code uses plain mul/add (Rust never contracts them into FMA), so results are the same bits
//! on every CPU; the per-ISA copies (`isa_versions!`) only widen the vectors.

/// exp(x) for x in [-87.3, 88.3] (Cephes `expf` polynomial, about 1 ulp); below the range it
/// returns 0 (exp(-inf) = 0), above it the value at 88.3. NaN inputs are the caller's business.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LO: f32 = -87.336_54;
    const HI: f32 = 88.376_26;
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let xc = if x < LO { LO } else { x };
    let xc = if xc > HI { HI } else { xc };
    let t = xc * LOG2E + MAGIC;
    let n = t - MAGIC;
    // t = 1.5·2^23 + n exactly, so its bits differ from MAGIC's by n: an integer n without a
    // float-to-int conversion (which does not vectorise with Rust's saturating `as`).
    let ni = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = xc - n * C1 - n * C2;
    let r2 = r * r;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let p = p * r2 + r + 1.0;
    let scale = f32::from_bits((ni.wrapping_add(127) as u32) << 23);
    let y = p * scale;
    if x < LO {
        0.0
    } else {
        y
    }
}

/// The softmax of one row in f32, written to `out` (same length).
#[inline(always)]
fn softmax_row_impl(x: &[f32], out: &mut [f32]) {
    let mut mx = [f32::NEG_INFINITY; 8];
    let mut nan = [false; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for j in 0..8 {
            let v = c[j];
            mx[j] = if v > mx[j] { v } else { mx[j] };
            nan[j] |= v.is_nan();
        }
    }
    let mut m = f32::NEG_INFINITY;
    let mut bad = nan.iter().any(|&b| b);
    for &v in chunks.remainder().iter().chain(mx.iter()) {
        m = if v > m { v } else { m };
        bad |= v.is_nan();
    }
    if bad || !m.is_finite() {
        // NaN anywhere, +inf (inf - inf) or an all -inf row (-inf - -inf): NaN like NumPy.
        out.fill(f32::NAN);
        return;
    }
    let mut acc = [0.0f32; 8];
    let mut oc = out.chunks_exact_mut(8);
    let mut xc = x.chunks_exact(8);
    for (o, c) in (&mut oc).zip(&mut xc) {
        for j in 0..8 {
            let e = exp_f32(c[j] - m);
            o[j] = e;
            acc[j] += e;
        }
    }
    let mut tail = 0.0f32;
    for (o, &v) in oc.into_remainder().iter_mut().zip(xc.remainder()) {
        let e = exp_f32(v - m);
        *o = e;
        tail += e;
    }
    let s =
        ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail;
    let inv = 1.0 / s;
    for o in out.iter_mut() {
        *o *= inv;
    }
}

#[inline(always)]
fn softmax_rows_impl(x: &[f32], out: &mut [f32], d: usize) {
    for (xr, orow) in x.chunks_exact(d).zip(out.chunks_exact_mut(d)) {
        softmax_row_impl(xr, orow);
    }
}

crate::isa_versions! {
    /// The softmax of consecutive rows of length `d` (`x.len()` a multiple of `d`, `d > 0`),
    /// vectorised for `isa` (the same bits on every one).
    pub fn softmax_rows(x: &[f32], out: &mut [f32], d: usize) => softmax_rows_impl
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> i64 {
        (i64::from(a.to_bits() as i32) - i64::from(b.to_bits() as i32)).abs()
    }

    #[test]
    fn exp_accuracy() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.0 {
            let exact = (f64::from(x)).exp() as f32;
            worst = worst.max(ulps(exp_f32(x), exact));
            x += 0.001_37;
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-100.0), 0.0);
    }
}
