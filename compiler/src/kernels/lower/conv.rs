//! The tile mappings of the spectral (FFT) and convolution kernels.

use super::*;

/// The launch shape of an FFT (one block per line) or a frequency-domain product (one thread
/// per output).
pub(super) fn spectral_tile(g: &Graph, k: &Kernel, tk: &mut TileKernel) -> Result<(), NotLowered> {
    use crate::graph::FftKind;
    match g.op(k.root) {
        Some(Op::Fft {
            x,
            kind,
            axis,
            n,
            norm,
            embed,
        }) => {
            let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
            let wide = k.ty.dtype == DType::C128 || k.ty.dtype == DType::F64;
            let max = FFT_MAX_LINE[usize::from(wide)];
            // other lengths: the direct sum, up to FFT_MAX_DIRECT
            let direct = !n.is_power_of_two() || *n < 2;
            if (direct && *n > FFT_MAX_DIRECT) || *n > max {
                return Err(nl(
                    k,
                    format!(
                        "an FFT of length {n} (the kernel transforms powers of two up to {max}, other lengths up to {FFT_MAX_DIRECT}, in one block; longer lines run on the cpu)"
                    ),
                ));
            }
            if !(tx.dtype.is_complex() || any_float(tx.dtype) || tx.dtype == DType::F64) {
                return Err(nl(k, format!("an FFT of {} data", tx.dtype)));
            }
            let outer: usize = tx.shape[..*axis].iter().product();
            let inner: usize = tx.shape[axis + 1..].iter().product();
            let lines = outer as u64 * inner as u64;
            if lines == 0 || numel(tx).max(numel(&k.ty)) * 2 > u64::from(u32::MAX) {
                return Err(nl(k, "an empty or too large FFT"));
            }
            let u = |v: usize| u32_of(k, v);
            let embed = if *kind == FftKind::RealInverse {
                crate::graph::FftEmbed::default()
            } else {
                *embed
            };
            // adjacent lines per block along a middle axis (coalesced loads and stores): up
            // to 32, as many as the 48 KiB of shared memory hold beside the twiddles
            let eb = if wide { 8 } else { 4 };
            let twiddles = if direct { 2 * n * eb } else { n * eb };
            let room = (49152 - twiddles) / (2 * n * eb);
            let per_block = if inner == 1 {
                1
            } else {
                let cap = room.min(32).min(inner.next_power_of_two()).max(1);
                1usize << cap.ilog2()
            };
            let blocks = outer as u64 * inner.div_ceil(per_block) as u64;
            tk.grid = [
                u32::try_from(blocks).map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            // whole warps (the kernel's loops mask the positions past a line): a direct
            // transform of 100 points once launched 50 threads
            let threads = (n / 2 * per_block).clamp(32, 256).next_multiple_of(32);
            tk.block = [threads as u32, 1, 1];
            tk.shape = Shape::Fft(crate::tile::FftDims {
                kind: *kind,
                n: u(*n)?,
                lines: u(per_block)?,
                outer: u(outer)?,
                inner: u(inner)?,
                len_in: u(tx.shape[*axis])?,
                len_out: u(k.ty.shape[*axis])?,
                lo: u(embed.lo)?,
                step: u(embed.step.max(1))?,
                scale: norm.scale(*n, kind.inverse()),
                wide,
            });
            Ok(())
        }
        Some(Op::SpectralMul { x, w, groups }) => {
            let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
            let tw = g.ty(*w).ok_or_else(|| nl(k, "untyped operand"))?;
            let bins: usize = tx.shape[2..].iter().product();
            let total = numel(&k.ty);
            if total == 0 || numel(tx).max(numel(tw)).max(total) * 2 > u64::from(u32::MAX) {
                return Err(nl(k, "an empty or too large product"));
            }
            let u = |v: usize| u32_of(k, v);
            let threads = 256u32;
            tk.block = [threads, 1, 1];
            tk.grid = [
                u32::try_from(total.div_ceil(u64::from(threads)))
                    .map_err(|_| nl(k, "grid too large"))?,
                1,
                1,
            ];
            tk.shape = Shape::SpectralMul {
                batch: u(tx.shape[0])?,
                cin: u(tx.shape[1])?,
                cout: u(tw.shape[0])?,
                groups: u(*groups)?,
                bins: u(bins)?,
                wide: k.ty.dtype == DType::C128,
            };
            Ok(())
        }
        _ => Err(nl(k, "not an FFT or a frequency-domain product")),
    }
}

/// The launch shape of a convolution kernel: the direct one, or the implicit GEMM when the
/// schedule says tensor cores.
pub(super) fn conv_tile(g: &Graph, k: &Kernel, tk: &mut TileKernel) -> Result<(), NotLowered> {
    let Some(Op::Conv { x, w, bias, attrs }) = g.op(k.root) else {
        return Err(nl(k, "not a convolution"));
    };
    let tx = g.ty(*x).ok_or_else(|| nl(k, "untyped operand"))?;
    let tw = g.ty(*w).ok_or_else(|| nl(k, "untyped operand"))?;
    let mut dts = vec![tx.dtype, tw.dtype, k.ty.dtype];
    if let Some(b) = bias {
        dts.push(g.ty(*b).ok_or_else(|| nl(k, "untyped operand"))?.dtype);
    }
    if let Some(d) = dts.iter().find(|&&d| !(any_float(d) || d == DType::F64)) {
        return Err(nl(k, format!("{d} convolutions")));
    }
    let d = usize::from(attrs.dims);
    let batched = tx.shape.len() == d + 2;
    let xs = &tx.shape[usize::from(batched)..];
    let batch = if batched { tx.shape[0] } else { 1 };
    let lift = |v: &[usize]| -> [usize; 2] {
        if d == 1 {
            [1, v[0]]
        } else {
            [v[0], v[1]]
        }
    };
    let input = lift(&xs[1..]);
    let kernel = lift(&tw.shape[2..]);
    let output = lift(&k.ty.shape[k.ty.shape.len() - d..]);
    let (cin, cout) = (xs[0], tw.shape[0]);
    let planes = batch as u64 * cout as u64;
    if planes == 0 || output.contains(&0) {
        return Err(nl(k, "empty convolution"));
    }
    if numel(tx).max(numel(tw)).max(numel(&k.ty)) > u64::from(u32::MAX) {
        return Err(nl(k, "too large a convolution"));
    }
    let s = &k.schedule;
    let u = |v: usize| u32_of(k, v);
    let u2 = |v: [usize; 2]| -> Result<[u32; 2], NotLowered> { Ok([u(v[0])?, u(v[1])?]) };
    let mut dims = crate::tile::ConvDims {
        planes: u32::try_from(planes).map_err(|_| nl(k, "too many planes"))?,
        cin: u(cin)?,
        cout: u(cout)?,
        groups: u(attrs.groups)?,
        input: u2(input)?,
        kernel: u2(kernel)?,
        output: u2(output)?,
        stride: u2(attrs.stride)?,
        dilation: u2(attrs.dilation)?,
        pad: u2([attrs.pad[0].0, attrs.pad[1].0])?,
        bias: bias.is_some(),
        tile: [s.tile[0].max(1), s.tile[1].max(1)],
        vector: s.vector.max(1),
        mma: None,
    };
    if s.tensor_cores {
        // the implicit GEMM: grid x the pixel tiles of every image, y the output-channel
        // tiles of a group, z the groups
        let kind = match (tx.dtype, tw.dtype) {
            (DType::BF16, DType::BF16) => MmaKind::M16n8k16Bf16,
            (DType::F16, DType::F16) => MmaKind::M16n8k16F16,
            _ => {
                return Err(nl(
                    k,
                    "tensor cores with operands other than bf16/fp16 pairs",
                ))
            }
        };
        let tile = s.tile;
        if !crate::schedule::fit::conv_mma_tile_ok(tile) {
            return Err(nl(
                k,
                format!("an implicit-GEMM convolution tile of {tile:?} (BM and BN 32, 64 or 128; BK 16 or 32)"),
            ));
        }
        let groups = attrs.groups.max(1) as u64;
        let pixels = batch as u64 * (output[0] * output[1]) as u64;
        let cout_g = (cout / attrs.groups.max(1)) as u64;
        let grid = |v: u64, t: u32| u32::try_from(v.div_ceil(u64::from(t)).max(1));
        tk.grid = [
            grid(pixels, tile[1]).map_err(|_| nl(k, "grid too large"))?,
            grid(cout_g, tile[0]).map_err(|_| nl(k, "grid too large"))?,
            u32::try_from(groups)
                .ok()
                .filter(|&g| g <= 65535)
                .ok_or_else(|| nl(k, "more than 65535 groups"))?,
        ];
        tk.block = [(tile[0] / 32) * (tile[1] / 32) * 32, 1, 1];
        dims.mma = Some(crate::tile::ConvMma { kind, tile });
        tk.shape = Shape::Conv(dims);
        return Ok(());
    }
    let [bm, bn] = dims.tile;
    let vector = dims.vector;
    let threads = (bm * (bn / vector)).next_multiple_of(32);
    if !bn.is_multiple_of(vector) || threads > 1024 {
        return Err(nl(
            k,
            format!("a convolution tile of ({bm}, {bn}) with vector {vector} (at most 1024 threads, vector dividing BN)"),
        ));
    }
    let tiles = ceil(output[0] as u64, u64::from(bm)) * ceil(output[1] as u64, u64::from(bn));
    tk.block = [threads, 1, 1];
    tk.grid = [
        u32::try_from(tiles).map_err(|_| nl(k, "grid too large"))?,
        planes.min(65535) as u32,
        u32::try_from(planes.div_ceil(65535)).map_err(|_| nl(k, "grid too large"))?,
    ];
    tk.shape = Shape::Conv(dims);
    Ok(())
}
