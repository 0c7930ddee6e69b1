//! The description of every member of the builtin modules (see [`crate::help`]): its first
//! sentence is `help(module)`'s one-liner, the whole text `help(module.NAME)` and the guide's
//! reference.

/// `(module.name, description)`, grouped by module.
pub const DESCRIPTIONS: &[(&str, &str)] = &[
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
        `tile_shape` must be a list of ints but is not used yet. In a kernel bf16/fp16 pairs run \
        on tensor cores and a following bias or activation fuses into the epilogue.",
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
    (
        "dist.Mesh",
        "A mesh of devices with named axes, as `dist.Mesh([\"tp\", \"dp\"], shape=(2, 4))`. \
        `devices` (a list or a `range`) defaults to `range(prod(shape))`; without `shape` the mesh \
        takes the most balanced factorisation of the device count (72 devices over 3 axes: `(6, 4, \
        3)`). Neither `shape` nor `devices`, or a shape whose product is not the device count, is \
        E0400. It has `.axes`, `.shape`, `.devices` and `.size`.",
    ),
    (
        "dist.ShardSpec",
        "A sharding layout: which tensor dimensions split over which mesh axes. `partition` names \
        dimensions, \"row\" (the second to last), \"col\" (the last) or an index, and `mesh_axes` \
        the axis each is split over; unnamed dimensions are replicated. Lengths that differ are \
        E0400; an axis the mesh lacks is E0400 when the spec is used.",
    ),
    (
        "dist.all_gather",
        "Collective: gathers the shards of `t` over mesh axis `axis`. Every device then holds the \
        whole of the dimension split over it; `t` must be split over that axis (E0400).",
    ),
    (
        "dist.all_reduce",
        "Collective: reduces sharded `t` over mesh axis `axis` onto every device. `op` is \"sum\" \
        (the default), \"max\" or \"min\"; `t` must not be split over the axis (its devices hold \
        partial sums or replicas, and replicas combine like any values; else E0400). The order is \
        fixed: the result is deterministic.",
    ),
    (
        "dist.gather",
        "The whole of sharded tensor `t`, as an ordinary tensor. An unsharded tensor is returned \
        as it is; an abstract sharded tensor gives an abstract tensor.",
    ),
    (
        "dist.pipeline",
        "Pipeline parallelism: a callable running `stages` as a pipeline. Stage i (a function or \
        kernel) sits on index i of mesh axis `mesh_axis` (without `mesh`, one device per stage). A \
        call splits its input along the first dimension into `microbatches` (as `torch.chunk`), \
        runs the stages at once and concatenates the outputs: the result of the stages in \
        sequence. `schedule` is \"1f1b\" (at most one micro-batch per stage in flight) or \
        \"gpipe\"; `.bubble` and `.stage_times` report the last call. An axis not of one index per \
        stage is E0400.",
    ),
    (
        "dist.plan",
        "Ranks candidate mesh shapes for a step by the cost model, as a table. Every ordered \
        factorisation of `devices` over `axes` (default: the first sharded argument's mesh) runs \
        `f(*args)` on abstract shards, allocating nothing; a row gives the predicted step time, \
        collective bytes, memory per device, collectives and axis placement on `target.system()`. \
        Over 2000 shapes, or an argument split over an axis not named, is E0400.",
    ),
    (
        "dist.reduce_scatter",
        "Collective: reduces sharded `t` over mesh axis `axis`, leaving each device a part. `op` \
        is \"sum\" (the default), \"max\" or \"min\"; the result is split along dimension `dim` \
        (default 0). `t` must not be split over `axis` nor along `dim` already (E0400).",
    ),
    (
        "dist.shard",
        "Splits tensor `t` over `mesh` by `spec` (a `dist.ShardSpec`): a sharded tensor. Ops on it \
        run per device with the collectives they need, deterministic and equal to the unsharded \
        result within rounding; a dimension its axis does not divide splits as `torch.chunk` does. \
        A sharded `t` is resharded on its own mesh (another mesh is E0400).",
    ),
    (
        "dist.tensor",
        "An abstract tensor: `shape` and `dtype` (default fp32) but no data. It traces, compiles, \
        shards and profiles by the cost model at any size; reading its values is E0700. With \
        `layout` (a `dist.ShardSpec`) and `mesh` it is sharded; `layout` without `mesh` is E0400 \
        (a `mesh` alone is ignored), and so is a shard over one GPU's memory on a named system.",
    ),
    (
        "graph.cache_stats",
        "The session's kernel compile cache counters, as `(hits, misses)`. Every call traces the \
        body; a miss compiles a kernel for a new trace (shapes, dtypes, the constants the body \
        reads, schedule), a hit reuses one on this call's captured tensors; optimizer updates \
        count too.",
    ),
    (
        "graph.fusions",
        "The Graph IR rewrites that fired for `f(*args)`, as a list of rule names in order. `f` is \
        a kernel or a function, compiled but not run. With `explain=True` it returns `(fired, \
        missed)`, lists of `(rule, note or reason, \"file:line:col\")`: `missed` says why a \
        candidate did not fire (such as a convolution that stayed direct).",
    ),
    (
        "graph.grad",
        "The gradient of `f`'s scalar result, as a kernel taking `f`'s arguments. `argnums` (an \
        int, default 0, or a tuple for a tuple of gradients) names the arguments. Reverse mode on \
        Graph IR: the backward graph is traced, fused and compiled like any kernel \
        (`graph.trace(graph.grad(f), *args)` shows it). An argument may be a list, tuple or dict \
        of tensors, nested (JAX's pytrees): its gradient has the same structure. A non-scalar \
        result is E0200, `argnums` naming a non-tensor (or a structure holding one) E0101, an int result or an op without a derivative E0201; on a mesh, \
        gradients of `dp`-replicated parameters are all-reduced in buckets.",
    ),
    (
        "graph.lower",
        "The IR of `f(*args)` at one compiler level, as a string. `level` is \"graph\" (after the \
        Graph IR passes; the default), \"schedule\", \"tile\", \"target\", \"ptx\" or \"spirv\", for \
        `target.current()`; `f` is compiled, not run, and each op carries its `loc(...)`. With \
        sharded arguments \"schedule\" is the mesh Schedule IR (per-device kernels, collectives) \
        and lower levels one device's kernel. An unknown level is E0101.",
    ),
    (
        "graph.profile",
        "Profiles the kernels `f` launches, as a table. `f(*args)` is called as a kernel (a plain \
        function with arguments is compiled as one); a function without arguments runs as a whole \
        step and every kernel and collective it launches is profiled. Launches of the same kernel \
        and shapes from the same `.tsr` line are one row per device and source: op (with its \
        shape), line, tile, device, count, total, latency (the median launch; each launch the \
        median of `repeats` runs), occupancy, GB/s, TFLOP/s, bound and `source` (measured or \
        model); the table ends with the totals of each device. It shows the `top` kernels with \
        the most time by the model and sums the rest in an `other` row (`top=None`: every \
        kernel). `ptxas=False` uses the Target IR's register estimate; `repeats` outside 1 to \
        10000 is E0101.",
    ),
    (
        "graph.run_tile",
        "Runs one kernel's Tile IR text on the emulator and returns its outputs. `text` is what \
        `graph.lower(..., level=\"tile\")` prints, edited or hand-written; the tensors bind in \
        order to its `in` and `out` parameters (of matching dtypes), `out` buffers start as \
        copies, and the result is the `out` tensor (a tuple for several). `grid` (one to three \
        ints) replaces the text's grid. Errors point into the text: parse E0001, check E0201, \
        target limit E0300, an emulator fault (a race, an out-of-bounds access) E0500.",
    ),
    (
        "graph.trace",
        "The Graph IR of `f(*args)` as traced, before any rewrite. A value that prints as the text \
        (`.text` holds it); `f` is a kernel or a function, and nothing runs.",
    ),
    (
        "graph.value_and_grad",
        "Like `graph.grad`, but the kernel returns `(value, gradients)`. Both come from one \
        compiled graph; the gradients are a tuple for a tuple `argnums`.",
    ),
    (
        "schedule.async_copy",
        "Directive: copy matmul operand tiles to shared memory asynchronously. With `cp.async`, on \
        by default; the value shows in the Schedule IR, but the current lowering copies \
        asynchronously either way. Like every directive it applies to the kernel being traced: \
        outside an `@op.kernel` body it is E0201.",
    ),
    (
        "schedule.autotune",
        "Directive: autotune this kernel on its first call per signature. As `@op.autotune` does, \
        with the cache `autotune`. `cost_model` is \"roofline\" (another is E0101), `max_trials` \
        (default 50) caps the top-ranked candidates timed on a GPU, `budget_ms` the search time.",
    ),
    (
        "schedule.fusion",
        "Directive: how far the Graph IR fuses this kernel. \"auto\" (the default), \"none\" (no \
        fusion pass) or an int, the most elementwise ops per group (another str: E0101).",
    ),
    (
        "schedule.grad_bucket",
        "Directive: the most bytes one data-parallel gradient all-reduce carries. Default 1 MiB, \
        for `graph.grad` kernels on arguments sharded over a `dp` axis (E0300 if below 1).",
    ),
    (
        "schedule.occupancy_target",
        "Directive: the range of warps per SM the kernel should reach. `min_warps` and `max_warps` \
        are optional positive ints, `min_warps > max_warps` is E0300; the directive is checked and \
        recorded, but the compiler does not act on it yet.",
    ),
    (
        "schedule.overlap",
        "Directive: overlap gradient all-reduces with the backward pass (default on). \
        `overlap(False)` waits for each bucket's all-reduce when it is issued; see the profile.",
    ),
    (
        "schedule.pipeline_stages",
        "Directive: the number of shared-memory stages of a matmul's K loop. Default 2, 3 with \
        tensor cores. A block needs `stages * (BM*BK + BK*BN)` operand elements of shared memory: \
        over the target's limit is E0300 when the kernel compiles, as is a count below 1.",
    ),
    (
        "schedule.search_space",
        "Directive: the values the autotuner may try. `tile_sizes` lists tiles `(BM, BN, BK)` or \
        `(BM, BN)` (an int n means `(n, n, 32)`), `vectorize` widths (1, 2, 4, 8 or 16) and \
        `pipeline_stages` counts; an empty list is E0300. Used only when the kernel is autotuned \
        (`@op.autotune` or `schedule.autotune`).",
    ),
    (
        "schedule.tile",
        "Directive: the block tile `(BM, BN, BK)`, and the warp tile `warp=(WM, WN)`. `(BM, BN)` \
        for a kernel without a reduction dimension (a direct convolution; elementwise kernels keep \
        their own block size). A warp tile that does not divide the block is E0300, and so, when \
        the kernel compiles, is a tile needing over 1024 threads or too much shared memory, or one \
        not a multiple of the MMA shape with tensor cores.",
    ),
    (
        "schedule.use_tensor_cores",
        "Directive: whether kernels may use tensor cores (default on). Matmul, attention and \
        convolution kernels use them for bf16/fp16 operand pairs and tf32 (`mma.sync`, `wgmma` on \
        sm_90a); fp32 operands keep FMA. Tiles must then be multiples of the MMA shape (E0300).",
    ),
    (
        "schedule.vectorize",
        "Directive: the vector width, elements per thread access. For elementwise and copy kernels \
        and direct convolution rows: 1, 2, 4, 8 or 16 (else E0300); default: the compiler's pick.",
    ),
    (
        "target.current",
        "The name of the compilation target, such as \"sm_90\". By default the GPU present's, else \
        sm_90; `--target`, `:target` and `target.set` change it.",
    ),
    (
        "target.device",
        "The name of the device kernels run on: \"cpu\", \"emu\", \"cuda\" or \"vulkan\".",
    ),
    (
        "target.info",
        "The current target's limits and peak rates, as a table. Each figure is also an attribute \
        (`target.info().sm_count`, `.max_smem_per_block`, `.mma_shapes`, `.bf16_tflops`, \
        `.hbm_gbps`; `dir()` lists them); the cost model and the schedule checks use them.",
    ),
    (
        "target.set",
        "Sets the compilation target: \"sm_80\", \"sm_90\", \"sm_90a\", \"sm_100\" or \"spirv\" \
        (Vulkan 1.3 compute SPIR-V). Another name \
        is E0101. Kernels compiled from then on are lowered for it (it is part of the compile \
        cache's key); a system from `target.set_system` with another GPU is forgotten.",
    ),
    (
        "target.set_device",
        "Chooses the device kernels run on. \"auto\" (the GPU when a usable one is present, else \
        cpu), \"cpu\", \"emu\" (the generated PTX run by the CPU emulator), \"cuda\" or \"vulkan\" \
        (the SPIR-V through the system's Vulkan driver; the target becomes \"spirv\"); \"cuda\" \
        or \"vulkan\" without a usable device is E0800 and the device stays, another name is E0101.",
    ),
    (
        "target.set_system",
        "Sets the multi-GPU system the mesh cost model plans for. \"dgx-a100\", \"dgx-h100\", \
        \"hgx-b200\" or \"gb200-nvl72\" (another is E0101); the target becomes its GPU's, and \
        `dist.plan`, the profile and `dist.tensor`'s memory check use its interconnect.",
    ),
    (
        "target.system",
        "A line describing the system the mesh cost model uses. Its name, GPU, devices per NVLink \
        domain and bandwidths; without `target.set_system`, the default system of the current \
        target (dgx-h100 for sm_90).",
    ),
    (
        "autotune.candidates",
        "The candidates the autotuner ranked this session, as a list of dicts. In ranking order \
        per tuned kernel, with keys `op`, `shapes`, `config`, `rank` (1 is the model's best), \
        `predicted_us`, `measured_us` (None unless a GPU timed it) and `chosen`; a kernel \
        configured from the cache adds none.",
    ),
    (
        "autotune.clear",
        "Forgets this session's tuning: known cache entries, runs and candidates. Files on disk \
        are untouched and are read again on next use; kernels already compiled keep their config.",
    ),
    (
        "autotune.enable",
        "Turns autotuning on or off for the session (`on` defaults to True). Off, an autotuned \
        kernel keeps its body's schedule and no cache is read or written; `on` that is not a bool \
        is E0101. `TESSERA_AUTOTUNE=off` in the environment takes the model's pick instead.",
    ),
    (
        "autotune.load_cache",
        "Merges the autotune cache file at `path` into the session. Returns how many entries it \
        read; a missing, unreadable or corrupt file is a warning and 0, not an error.",
    ),
    (
        "autotune.report",
        "This session's tuning and the cache, as tables. Each kernel tuned or taken from the cache \
        (config, predicted and measured time, source, candidates ranked, pruned, trials), the \
        cache entries known, and each measured candidate's predicted beside measured time.",
    ),
    (
        "autotune.save_cache",
        "Writes the session's autotune entries to the JSON file `path`. They are merged with what \
        it holds, atomically under a lock; returns the entry count of the file. A path that is not \
        a string is E0101, a failed write E0500.",
    ),
    (
        "optim.adam",
        "Adam optimizer, PyTorch's rule: `opt.update(params, grads)` returns the new parameters \
        in the structure of `params` (a list, tuple or dict of tensors, nested; `grads` in the \
        same structure, a dict's entries paired by key). Bias-corrected moments with `betas` (a tuple of two numbers in [0, 1]), `eps`, and \
        `weight_decay` added to the gradient (`g + wd * p`, not AdamW). Each parameter's update is \
        one compiled elementwise kernel, in fp32 (fp64 for fp64) rounded once, run per device on a \
        sharded parameter's shards; the state lives in the optimizer per parameter (its place in \
        the structure; `opt.step` counts). A negative `lr` is E0101.",
    ),
    (
        "optim.sgd",
        "Stochastic gradient descent: `opt.update(params, grads)` returns the new parameters, in \
        the structure of `params` as `optim.adam`. \
        PyTorch's rule: velocity `v = momentum * v + g` (the first step `v = g`), then `p - lr * \
        v`; `momentum` is in [0, 1] (default 0). Kernels and state as `optim.adam`; params and \
        grads pair by place (a structure that differs is E0101, other shapes are E0200, non-float tensors E0201).",
    ),
    (
        "plot.figure",
        "An empty figure to add series to: `fig.line(ys, x=None, label=None)` and \
        `fig.scatter(x, y, label=None)` add one and return the figure. `title`, `xlabel`, `ylabel` \
        label it and `logy=True` makes the y axis logarithmic. In Jupyter a cell whose value is a \
        figure shows it as an SVG image (text elsewhere: the series, their points and ranges); \
        `fig.svg()` is the SVG text and `fig.save(path)` writes it (the bytes written).",
    ),
    (
        "plot.line",
        "A figure with one line series: `ys` a list, range or 1-D real tensor, `x` the same \
        length (default 0, 1, ...). Options as `plot.figure`. The SVG is the same bytes on every \
        run and machine. A non-number, NaN or infinity, an empty series, lengths that differ or a \
        value not above 0 on a log axis is E0101.",
    ),
    (
        "plot.scatter",
        "A figure with one scatter series of the points `(x[i], y[i])`: lists, ranges or 1-D real \
        tensors of one length. Options and errors as `plot.line`.",
    ),
    (
        "time.perf_counter",
        "Seconds on a monotonic clock with the finest resolution there is, as a float: the \
        difference of two calls is the time between them (its zero is arbitrary). Time a training \
        step with it.",
    ),
    (
        "time.sleep",
        "Waits `secs` seconds (an int or float). A negative or NaN time is E0500, one over a day \
        (86400 s) E0700. An interrupt (Ctrl-C, Jupyter's stop button) ends the wait.",
    ),
    (
        "time.time",
        "The wall clock: seconds since the Unix epoch (1970-01-01 UTC), as a float.",
    ),
];
