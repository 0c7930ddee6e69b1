//! Counter-based random numbers (docs/decisions.md "Random numbers"): element `i` depends only on
//! `(seed, i)`, so values are the same on every machine, thread count and backend.

use crate::cast;
use crate::dtype::DType;

/// The SplitMix64 finaliser (all arithmetic mod 2^64).
pub fn splitmix64(z: u64) -> u64 {
    let z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `bits(seed, i) = splitmix64(splitmix64(seed) ^ i)`, seed as 64-bit two's complement.
pub fn bits(seed: i64, i: u64) -> u64 {
    splitmix64(splitmix64(seed as u64) ^ i)
}

/// Uniform [0, 1) value `i` for a float dtype of precision `p` bits: exact in that dtype.
pub fn uniform(seed: i64, i: u64, p: u32) -> f64 {
    let p = p.clamp(1, 53);
    (bits(seed, i) >> (64 - p)) as f64 * cast::pow2(-(p as i32))
}

/// Standard normal value `i` by Box-Muller in f64 (before rounding to the dtype).
pub fn normal(seed: i64, i: u64) -> f64 {
    let u1 = ((bits(seed, 2 * i) >> 11) + 1) as f64 * cast::pow2(-53);
    let u2 = (bits(seed, 2 * i + 1) >> 11) as f64 * cast::pow2(-53);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The precision `rand` uses for `dtype` (None for int and bool dtypes).
pub fn precision(dtype: DType) -> Option<u32> {
    dtype.precision()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from an independent Python transcription of docs/decisions.md:
    //   M=(1<<64)-1
    //   def sm(z):
    //       z=(z+0x9E3779B97F4A7C15)&M; z=((z^(z>>30))*0xBF58476D1CE4E5B9)&M
    //       z=((z^(z>>27))*0x94D049BB133111EB)&M; return z^(z>>31)
    //   bits=lambda s,i: sm(sm(s&M)^i)
    //   rand: (bits(s,i)>>(64-p))/2**p ;  randn: u1=((bits(s,2i)>>11)+1)/2**53,
    //   u2=(bits(s,2i+1)>>11)/2**53, math.sqrt(-2*math.log(u1))*math.cos(2*math.pi*u2)
    #[test]
    fn splitmix_reference() {
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(bits(0, 0), BITS_0_0);
        assert_eq!(bits(-1, 3), BITS_M1_3);
    }

    #[test]
    fn rand_reference() {
        assert_eq!(uniform(0, 0, 24), RAND_0_0_F32);
        assert_eq!(uniform(0, 1, 24), RAND_0_1_F32);
        assert_eq!(uniform(42, 5, 53), RAND_42_5_F64);
        assert_eq!(uniform(7, 2, 8), RAND_7_2_BF16);
        for i in 0..1000 {
            let u = uniform(123, i, 3);
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u * 8.0, (u * 8.0).floor());
        }
    }

    #[test]
    fn randn_reference() {
        assert_eq!(normal(0, 0), RANDN_0_0);
        assert_eq!(normal(0, 1), RANDN_0_1);
        assert_eq!(normal(-5, 10), RANDN_M5_10);
    }

    // Output of that snippet:
    const BITS_0_0: u64 = 0xa706dd2f4d197e6f;
    const BITS_M1_3: u64 = 0x2e9f42f99dc9983;
    const RAND_0_0_F32: f64 = 0.6524484753608704;
    const RAND_0_1_F32: f64 = 0.034011662006378174;
    const RAND_42_5_F64: f64 = 0.9137029232447084;
    const RAND_7_2_BF16: f64 = 0.2734375;
    const RANDN_0_0: f64 = 0.9031242066134643;
    const RANDN_0_1: f64 = 0.11493113170609602;
    const RANDN_M5_10: f64 = 0.4714761167472971;
}
