//! The descriptions of the `op` module's members (the row functions' are in the compiler's
//! `ROW_FNS`).

pub(super) const OP: &[(&str, &str)] = &[
    (
        "op.abs",
        "Absolute value, elementwise. Ints keep their dtype (wrapping at the most negative value), \
        bool gives int64, and a complex tensor gives its modulus as a real tensor (fp32 for c64, \
        fp64 for c128). The derivative is `sign(x)`.",
    ),
    (
        "op.add",
        "Elementwise `a + b`, broadcast, as the `+` operator. Either operand may be a Python \
        number; the result has the promoted dtype (bool + bool gives int64, ints wrap), and a \
        Python scalar never widens a float tensor (`bf16 + 1.0` is bf16). Bad shapes are E0200.",
    ),
    (
        "op.allclose",
        "Whether `a` and `b` are equal within tolerances, as a Python bool. NumPy's test `abs(a - \
        b) <= atol + rtol * abs(b)` everywhere after broadcasting, in fp64 (the modulus for \
        complex operands); NaN is never close, equal infinities are. It reads values, so inside a \
        kernel it is E0201; shapes that do not broadcast are E0200.",
    ),
    (
        "op.angle",
        "The argument `atan2(imag, real)` of each element, in radians. c64 gives fp32 and c128 \
        fp64; a real tensor gives 0 or pi (fp64 stays fp64, other dtypes give fp32).",
    ),
    (
        "op.arange",
        "Evenly spaced values in `[start, stop)`, as NumPy's `arange`. `arange(stop)` starts at 0; \
        `step` (default 1) may be negative but not zero (E0200). Without `dtype` the result is \
        int64 when every bound is an int, else fp32.",
    ),
    (
        "op.argmax",
        "Index of the largest element, as int64. `axis=None` indexes the flattened tensor (a 0-d \
        result); with an axis it gives one index per lane, and `keepdim=True` keeps that axis with \
        length 1. Ties give the first index and NaN counts as the largest (NumPy); an empty axis \
        is E0200, a complex tensor E0201, and inside a kernel it is E0201 (no traced form).",
    ),
    (
        "op.argmin",
        "Index of the smallest element, as int64. As `op.argmax`: ties give the first index, NaN \
        counts as the smallest, an empty axis is E0200, inside a kernel E0201.",
    ),
    (
        "op.autotune",
        "Decorator: a kernel whose schedule the autotuner picks. Written `@op.autotune` or \
        `@op.autotune(cache=\"NAME\")`; alone it implies `@op.kernel`. The first call of each \
        signature looks its key (kernel, shapes, dtypes, arch, source) up in \
        `$TESSERA_CACHE_DIR/NAME.json` (NAME defaults to `autotune`); on a miss it ranks the \
        `schedule.search_space` candidates (or a default space) by the cost model, times the best \
        on a GPU if there is one, and stores the winner. A bad cache name is E0101.",
    ),
    (
        "op.cast",
        "Converts a tensor to `dtype` (a name such as \"bf16\" or an `op.` dtype). Float casts \
        round to nearest even, fp8 saturates to its largest finite value, float to int truncates \
        toward zero (NaN or out of range is E0500), to bool is `x != 0`. Differentiable, per \
        device on a mesh; an unknown dtype name is E0201.",
    ),
    (
        "op.ceil",
        "Smallest integer not less than each element. Floats keep their dtype, ints are unchanged \
        (bool gives int64); the derivative is zero.",
    ),
    (
        "op.clip",
        "Limits values to `[min, max]`, as NumPy's `clip`. It is `minimum(maximum(x, min), max)`: \
        each bound is a number, a tensor (broadcast) or None, `max` wins when `min > max`, NaN \
        stays NaN, and the bounds join the dtype promotion (int clipped by float gives fp32).",
    ),
    (
        "op.complex",
        "The complex tensor `re + im*j` from real and imaginary parts, broadcast. The result is \
        c128 when the parts' promoted dtype is fp64, else c64; a complex part is E0201.",
    ),
    (
        "op.concat",
        "Joins a list of tensors along an existing `axis` (default 0). Every other dimension must \
        match and 0-d tensors cannot be joined (E0200); dtypes promote. Differentiable; on a mesh \
        the operands are gathered and the result is an ordinary tensor.",
    ),
    (
        "op.conj",
        "Complex conjugate, elementwise; a real tensor is returned unchanged.",
    ),
    (
        "op.conv1d",
        "1-D convolution (cross-correlation), PyTorch's NCL layout. `x` is `[N, C, L]`, `w` `[O, \
        C/groups, K]`, `bias` an optional `[O]`; `stride` and `dilation` are ints, `padding` an \
        int, \"same\" (stride 1 only) or \"valid\"; `groups=C` is depthwise. Computed in fp32 \
        (fp64 for fp64), rounded once to the promoted dtype (ints give fp32). `algorithm` \
        \"direct\" or \"fft\" forces a method, \"auto\" is direct when eager and the compiler's \
        choice in a kernel. Mismatched channels are E0200.",
    ),
    (
        "op.conv2d",
        "2-D convolution (cross-correlation), PyTorch's NCHW layout. `x` is `[N, C, H, W]`, `w` \
        `[O, C/groups, kH, kW]`, `bias` an optional `[O]`; `stride`, `padding` and `dilation` are \
        an int or a pair, `padding` also \"same\" or \"valid\". Otherwise as `op.conv1d`; in a \
        kernel \"auto\" rewrites a large convolution into `rfft2`, a product and `irfft2` when the \
        cost model predicts it faster (`graph.fusions` says why).",
    ),
    (
        "op.cos",
        "Cosine (radians), elementwise. Float and complex dtypes stay, ints and bool give fp32.",
    ),
    (
        "op.cross_entropy",
        "The cross-entropy of `logits` against integer class `targets`, as PyTorch's \
        `cross_entropy`: `-log_softmax(logits, axis)` at each target class, the classes along \
        `axis` (default -1) and `targets` of the logits' shape without that axis. `reduction` \
        is 'mean' (default), 'sum' or 'none' (one loss per target). Max-shifted, so large logits \
        stay finite; differentiable in `logits`. Float targets are E0201, a class index out of \
        range E0500, targets of another shape E0200.",
    ),
    (
        "op.cumsum",
        "Running sums along `axis` (default None: of the flattened tensor, a 1-D result). Floats \
        keep their dtype (each sum exact in fp64, rounded once); ints and bool give int64, \
        wrapping on overflow. A complex tensor is E0201, and inside a kernel it is E0201.",
    ),
    (
        "op.div",
        "True division `a / b`, elementwise with broadcasting, as the `/` operator. Float and \
        complex dtypes are kept; int and bool operands give fp32, so an integer division by zero \
        gives inf or NaN, not an error. Shapes that do not broadcast are E0200.",
    ),
    (
        "op.embedding",
        "Rows of `table` picked by the int tensor `indices`: `table[indices]`, of shape \
        `indices.shape + table.shape[1:]` (an embedding lookup). Differentiable in `table` (the \
        gradient adds each picked row's gradient into its row), eager, in a kernel and under \
        `graph.grad`; an index outside the table is E0500, float indices E0201.",
    ),
    (
        "op.erf",
        "The error function, elementwise. Float tensors keep their dtype; ints and bool give fp32.",
    ),
    (
        "op.exp",
        "Exponential `e**x`, elementwise. Float and complex dtypes stay, ints and bool give fp32.",
    ),
    (
        "op.eye",
        "The `n` by `n` identity matrix, of `dtype` (default fp32). A negative `n` is E0200.",
    ),
    (
        "op.fft",
        "Discrete Fourier transform along `axis` (default the last), as NumPy's. Any length; `n` \
        crops or zero-pads the axis (below 1 is E0200); `norm` is \"backward\" (the default: no \
        scaling), \"ortho\" or \"forward\". c64 and c128 are kept, fp64 and ints give c128, other \
        floats c64 (computed in fp32). Differentiable, per device on a mesh.",
    ),
    (
        "op.fft2",
        "2-D discrete Fourier transform over the last two axes. `s` (two lengths) crops or \
        zero-pads those axes; `norm` and the dtype as `op.fft`. Fewer than 2 dimensions is E0200.",
    ),
    (
        "op.flash_attention",
        "Scaled dot-product attention `softmax(Q @ K^T * scale) @ V`. Over `[..., seq, d]` \
        operands: `K` and `V` share a sequence length, `Q` and `K` a head dimension, batch \
        dimensions broadcast, and the result is `[..., seq_q, d_v]`. `scale` defaults to \
        `1/sqrt(d)`; `causal=True` masks key j > i for query i (top-left aligned). Computed in \
        fp32 (fp64 for fp64), rounded to the promoted dtype (ints give fp32); in a kernel one \
        fused kernel, with a fused backward for `graph.grad`. Mismatched dimensions are E0200.",
    ),
    (
        "op.floor",
        "Largest integer not greater than each element. Floats keep their dtype, ints are \
        unchanged (bool gives int64); the derivative is zero.",
    ),
    (
        "op.full",
        "A tensor of `shape` filled with `value`. Without `dtype` the value decides: int64 for an \
        int, fp32 for a float, bool for a bool; a value that is not a number is E0101.",
    ),
    (
        "op.gelu",
        "GELU activation `x * Phi(x)`, in its exact erf form (not the tanh approximation). Float \
        dtypes are kept, ints and bool give fp32; in a kernel it fuses into a matmul epilogue.",
    ),
    (
        "op.ifft",
        "Inverse discrete Fourier transform along `axis`, NumPy's `ifft`. `n`, `axis`, `norm` \
        (\"backward\" divides by n) and the complex result as `op.fft`.",
    ),
    (
        "op.ifft2",
        "Inverse 2-D discrete Fourier transform over the last two axes. `s`, `norm` and the \
        complex result as `op.fft2`.",
    ),
    (
        "op.imag",
        "Imaginary part of each element: fp32 of c64, fp64 of c128. A real tensor gives zeros.",
    ),
    (
        "op.irfft",
        "Inverse of `op.rfft`: `n` real values from the non-negative frequencies. Along `axis`; \
        `n` defaults to `2 * (m - 1)` for m input terms, and the imaginary parts of the zero and \
        Nyquist terms are ignored, as NumPy does. The result is fp32 (fp64 for c128, fp64 or int \
        input).",
    ),
    (
        "op.irfft2",
        "Inverse of `op.rfft2` over the last two axes. `s` gives the two output lengths (the last \
        defaults to `2 * (m - 1)`); `norm` and the real result as `op.irfft`.",
    ),
    (
        "op.isfinite",
        "Whether each element is finite (neither inf nor NaN), as a bool tensor. Ints and bools \
        are always finite; a complex element is finite when both parts are.",
    ),
    (
        "op.isnan",
        "Whether each element is NaN, as a bool tensor. Ints and bools never are; a complex \
        element is NaN when either part is.",
    ),
    (
        "op.kernel",
        "Decorator: compiles a function into a GPU kernel. A call traces the body with symbolic \
        tensors of the arguments' shapes and dtypes to Graph IR, fuses and lowers it for \
        `target.current()`, caches it per signature (tensor shapes and dtypes, the repr of the \
        other arguments, which are baked in, the target and the source) and runs it on \
        `target.device()`. Loops and `if` on shapes unroll at trace time; `if` on a tensor's \
        values is E0201. Called inside another kernel it is inlined, with sharded arguments it \
        runs per device; decorating a non-function is E0101.",
    ),
    (
        "op.layernorm",
        "Layer normalisation over the last axis. `(x - mean) / sqrt(var + eps) * weight + bias`, \
        `weight` and `bias` optional `[d]` tensors for a last dimension d (another shape is \
        E0200); the variance is biased, as PyTorch's. Statistics accumulate in fp64; float dtypes \
        are kept, ints give fp32. Differentiable, per device on a mesh.",
    ),
    (
        "op.linspace",
        "`num` evenly spaced values from `start` to `stop`, both included. As NumPy's `linspace`; \
        `num` defaults to 50 (a negative one is E0200), the dtype to fp32.",
    ),
    (
        "op.load",
        "Reads a `.npy` or `.safetensors` file (from `op.save`, NumPy or safetensors). A `.npy` \
        path gives its tensor; a `.safetensors` path a list of `(name, tensor)` pairs sorted by \
        name. bf16 and fp8 round-trip exactly; a missing, truncated or malformed file is E0500 \
        naming it, another extension E0101.",
    ),
    (
        "op.log",
        "Natural logarithm, elementwise. Float and complex tensors keep their dtype, ints and bool \
        give fp32; `log(0)` is -inf and a negative real gives NaN.",
    ),
    (
        "op.log_softmax",
        "`log(softmax(x, axis))` computed stably as `x - max - log(sum(exp(x - max)))` along \
        `axis` (default -1), in fp32 for narrower float inputs and rounded once to their dtype. \
        Differentiable, eager and in kernels; an int tensor is E0201.",
    ),
    (
        "op.logical_and",
        "Elementwise logical and (the `&` operator on bool tensors), as a bool tensor. A nonzero \
        number counts as true; operands broadcast and may be Python scalars.",
    ),
    (
        "op.logical_not",
        "Elementwise logical not, as a bool tensor; a nonzero number counts as true.",
    ),
    (
        "op.logical_or",
        "Elementwise logical or (the `|` operator on bool tensors), as a bool tensor. A nonzero \
        number counts as true; operands broadcast and may be Python scalars.",
    ),
    (
        "op.matmul",
        "Matrix product, batched over leading dimensions. The same as `A @ B`, with NumPy's rules: \
        a 1-D operand is a vector, batch dimensions broadcast, mismatched inner dimensions are \
        E0200. Floats accumulate in fp32 (fp64 for fp64; tf32 rounds the operands first), ints in \
        int64; the result dtype is `accum_dtype` when given, else the promoted input dtype. \
        In a kernel `tile_shape=(BM, BN, BK)` is `schedule.tile` for this one product (E0300 at \
        the call when the target cannot run it); eagerly it is checked and has nothing to tile. \
        In a kernel bf16/fp16 pairs run on tensor cores and a following bias or activation fuses \
        into the epilogue.",
    ),
    (
        "op.max",
        "Largest element along `axis` (None: of all elements), in the input dtype. `axis` is an \
        int or a list of ints; `keepdim=True` keeps reduced axes with length 1; NaN propagates. An \
        empty or out-of-range axis is E0500, a complex tensor E0201. The gradient is shared \
        equally among tied maxima; results are deterministic on every thread count and mesh.",
    ),
    (
        "op.max_abs_diff",
        "The largest `abs(a - b)` after broadcasting, as a Python float. Computed in fp64 (the \
        modulus for complex operands); NaN if any difference is NaN, 0.0 for empty tensors. It \
        reads values, so inside a kernel it is E0201.",
    ),
    (
        "op.maximum",
        "Elementwise maximum of `a` and `b`, broadcast, as NumPy's `maximum`. NaN propagates; the \
        result has the promoted dtype (bool stays bool); on a tie the gradient goes to `a`.",
    ),
    (
        "op.mean",
        "Average along `axis` (None: of all elements). `axis` is an int or a list of ints; \
        `keepdim=True` keeps reduced axes. Floats and complex keep their dtype, ints and bool give \
        fp32; the sum accumulates in fp64 in a fixed order (deterministic). An empty axis gives \
        NaN, an out-of-range one is E0500.",
    ),
    (
        "op.min",
        "Smallest element along `axis` (None: of all elements), in the input dtype. Arguments, NaN \
        propagation, errors and gradient as `op.max`.",
    ),
    (
        "op.minimum",
        "Elementwise minimum of `a` and `b`, broadcast, as NumPy's `minimum`. NaN propagates; the \
        result has the promoted dtype (bool stays bool); on a tie the gradient goes to `a`.",
    ),
    (
        "op.mul",
        "Elementwise `a * b` with broadcasting, as the `*` operator. Promotion as `op.add`: bool * \
        bool gives int64, ints wrap, a Python scalar never widens a float tensor.",
    ),
    (
        "op.neg",
        "Negation `-x`, elementwise. Keeps the dtype (ints wrap); bool gives int64.",
    ),
    (
        "op.one_hot",
        "One-hot encoding of the int tensor `indices`: a tensor of shape `indices.shape + (n,)` \
        and `dtype` (default fp32) with 1 at each index and 0 elsewhere, as \
        `torch.nn.functional.one_hot`. An index outside `[0, n)` is E0500, `n < 1` E0101.",
    ),
    (
        "op.ones",
        "A tensor of `shape` filled with ones, of `dtype` (default fp32). `shape` is a tuple or an \
        int; a negative dimension is E0200.",
    ),
    (
        "op.pow",
        "Elementwise power `a ** b` with broadcasting, as the `**` operator. Promotion as \
        `op.add`; int powers are exact (wrapping), and an int raised to a negative int is E0500 \
        (cast the base to a float first). Differentiable in both operands.",
    ),
    (
        "op.rand",
        "Uniform random numbers in [0, 1) of `shape` and a float `dtype` (default fp32). Without \
        a `seed` the draw takes its seed from the session's generator, which `op.seed(n)` resets \
        (a session starts at seed 0): two calls give different values, and a script the same \
        values on every run. With a `seed` the values depend on it alone. Counter-based: the same \
        values on every machine, backend and thread count. An int dtype is E0201, a seed that is \
        not an int E0101.",
    ),
    (
        "op.randint",
        "Random int64 integers in `[low, high)` of `shape`, as `torch.randint`. Without a `seed` \
        the draw takes its seed from the session's generator (see `op.rand`); `high <= low` is \
        E0101.",
    ),
    (
        "op.randn",
        "Standard normal random numbers (mean 0, variance 1) of `shape`. The `dtype` must be a \
        float type (default fp32); seeded, or drawn from the session's generator, as `op.rand`.",
    ),
    (
        "op.real",
        "Real part of each element: fp32 of c64, fp64 of c128. A real tensor is returned as is.",
    ),
    (
        "op.relu",
        "Rectified linear unit `max(x, 0)`, elementwise. Keeps the dtype (bool gives int64), NaN \
        stays NaN, a complex tensor is E0201; in a kernel it fuses into a matmul epilogue.",
    ),
    (
        "op.reshape",
        "The same elements in a new `shape` (an int or a tuple). One entry may be -1 (inferred); \
        another element count is E0200. Differentiable; on a mesh it gathers first.",
    ),
    (
        "op.rfft",
        "Fourier transform of real data: the `n/2 + 1` non-negative frequency terms. Along `axis`; \
        `n`, `axis`, `norm` and the dtype as `op.fft`; a complex input is E0201.",
    ),
    (
        "op.rfft2",
        "2-D Fourier transform of real data over the last two axes. The last keeps `n/2 + 1` \
        terms; `s` and `norm` as `op.fft2`, the dtype as `op.rfft`.",
    ),
    (
        "op.rmsnorm",
        "RMS normalisation over the last axis: `x / sqrt(mean(x**2) + eps) * weight`. `weight` is \
        an optional `[d]` tensor for a last dimension d (another shape is E0200). Statistics \
        accumulate in fp64; float dtypes are kept, ints give fp32. Differentiable; per device on a \
        mesh.",
    ),
    (
        "op.round",
        "Rounds to the nearest integer, ties to even. As NumPy's (0.5 gives 0, 1.5 and 2.5 give \
        2); floats keep their dtype, ints are unchanged (bool gives int64); the derivative is \
        zero.",
    ),
    (
        "op.rsqrt",
        "Reciprocal square root `1 / sqrt(x)`, elementwise. Float tensors keep their dtype, ints \
        and bool give fp32; 0 gives inf, a negative NaN.",
    ),
    (
        "op.save",
        "Writes a tensor file readable by NumPy or the safetensors package; returns None. A `.npy` \
        path takes one tensor; a `.safetensors` path named tensors, a list of `(name, tensor)` \
        pairs or a dict. bf16 and fp8 round-trip exactly through `op.load`. Another extension, or \
        one tensor for a `.safetensors` file, is E0101; a failed write is E0500.",
    ),
    (
        "op.seed",
        "Resets the session's random generator to seed `n` (an int; a session starts at 0): the \
        unseeded `op.rand`, `op.randn` and `op.randint` calls after it draw the same values as \
        after any other `op.seed(n)` with the same `n`. Returns None.",
    ),
    (
        "op.sigmoid",
        "Logistic sigmoid `1 / (1 + exp(-x))`, elementwise. Float dtypes are kept, ints and bool \
        give fp32; in a kernel it fuses into a matmul epilogue.",
    ),
    (
        "op.sign",
        "Sign of each element: -1, 0 or 1 (NumPy's: `sign(-0.0)` is 0, NaN stays NaN). Keeps the \
        dtype (bool gives int64); the derivative is zero.",
    ),
    (
        "op.silu",
        "SiLU (swish) activation `x * sigmoid(x)`, elementwise. Float dtypes are kept, ints and \
        bool give fp32; in a kernel it fuses into a matmul epilogue.",
    ),
    (
        "op.sin",
        "Sine (radians), elementwise. Float and complex dtypes stay, ints and bool give fp32.",
    ),
    (
        "op.sort",
        "The values sorted along `axis` (default the last). Ascending, or descending with \
        `descending=True`; stable, with NaNs last (first when descending), as NumPy; the dtype is \
        kept. A complex tensor is E0201, and inside a kernel it is E0201 (no traced form).",
    ),
    (
        "op.sqrt",
        "Square root, elementwise. Float and complex tensors keep their dtype, ints and bool give \
        fp32; a negative real gives NaN.",
    ),
    (
        "op.stack",
        "Joins tensors of one shape along a new `axis` (default 0). Dtypes promote; different \
        shapes are E0200, an empty list E0101; inside a kernel it is E0201 (no traced form: \
        reshape and `op.concat` instead).",
    ),
    (
        "op.sub",
        "Elementwise `a - b` with broadcasting, as the `-` operator. Promotion as `op.add`: bool - \
        bool gives int64, ints wrap, a Python scalar never widens a float tensor.",
    ),
    (
        "op.sum",
        "Sum along `axis` (None: of all elements). `axis` is an int or a list of ints (reduced in \
        one pass, rounded once); `keepdim=True` keeps reduced axes with length 1. Floats and \
        complex keep their dtype, ints and bool give int64; fp32 and narrower accumulate in fp64 \
        in a fixed blocked order: bit-identical on every run, thread count and mesh. A bad axis is \
        E0500.",
    ),
    (
        "op.tanh",
        "Hyperbolic tangent, elementwise. Float dtypes are kept, ints and bool give fp32; in a \
        kernel it fuses into a matmul epilogue.",
    ),
    (
        "op.tensor",
        "A tensor from a nested list of numbers or bools, a scalar or a tensor. Without `dtype`: \
        fp32 if any element is a float, bool if all are bools, else int64; a tensor is copied \
        (cast to `dtype` when given). Ragged lists are E0200.",
    ),
    (
        "op.topk",
        "The `k` largest values along an axis, with their indices. Returns `(values, indices)` \
        (int64), in order along `axis` (default the last); `largest=False` takes the smallest. \
        Ties keep index order and NaN counts as the largest (PyTorch's); `k` over the axis length \
        is E0200, and inside a kernel it is E0201.",
    ),
    (
        "op.transpose",
        "Permutes the dimensions; None reverses them, as `x.T`. `perm` lists the new order \
        (negative entries count from the end); an axis out of range is E0200. Differentiable; on a \
        mesh the tensor is gathered first.",
    ),
    (
        "op.where",
        "Elementwise choice: `a` where `cond` is true (nonzero), else `b`. The three broadcast \
        together; `a` and `b` may be Python numbers and the result has their promoted dtype (not \
        the condition's). Differentiable in `a` and `b`; shapes that do not broadcast are E0200.",
    ),
    (
        "op.zeros",
        "A tensor of `shape` filled with zeros, of `dtype` (default fp32). `shape` is a tuple or \
        an int; a negative dimension is E0200.",
    ),
];
