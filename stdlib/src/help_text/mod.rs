//! The description of every member of the builtin modules (see [`crate::help`]): its first
//! sentence is `help(module)`'s one-liner, the whole text `help(module.NAME)` and the guide's
//! reference.

/// `(module.name, description)`, grouped by module.
mod op;

/// Every description: `(module.name, text)`.
pub fn descriptions() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    op::OP.iter().chain(OTHER).chain(generated().iter())
}

/// The descriptions made from the device registry (`target.device`, `target.set_device`),
/// made once per process.
fn generated() -> &'static [(&'static str, &'static str)] {
    use tessera_runtime::device::registry;
    static GENERATED: std::sync::OnceLock<Vec<(&'static str, &'static str)>> =
        std::sync::OnceLock::new();
    GENERATED.get_or_init(|| {
        vec![
            ("target.device", registry::device_help().leak()),
            ("target.set_device", registry::set_device_help().leak()),
        ]
    })
}

/// The other modules' members: dist, graph, schedule, target, autotune, optim, plot, time.
const OTHER: &[(&str, &str)] = &[
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
        10000 is E0101. The table's `lines()` gives each row in one line, \
        `MatMul[128x128x32]  latency=2.85µs  occupancy=25.0%  hbm=1.2%  (sm_90 model)`, with the \
        bandwidth as a fraction of the target's HBM.",
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
        "Directive: copy matmul operand tiles to shared memory asynchronously with `cp.async` \
        (on by default). `async_copy(False)` loads them with ordinary loads and shared stores \
        (no `cp.async`, no commit or wait); the value shows in the Schedule IR. Like every \
        directive it applies to the kernel being traced: outside an `@op.kernel` body it is \
        E0201.",
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
        "Directive: the range of warps per block (optional positive ints; `min_warps > \
        max_warps` is E0300). Elementwise and row kernels run the power-of-two warp count in \
        range nearest their default, a tensor-core matmul gets a warp tile whose warps are in \
        range; the PTX's launch bound `.maxntid` is that block, which caps the registers per \
        thread, and the profile's occupancy follows. A kernel whose block cannot be brought in \
        range (a fixed template, an FMA matmul's tile) is E0300 naming why.",
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
        `(BM, BN)` (an int n means `(n, n, 32)`), `vectorize` widths (1, 2, 4, 8 or 16), \
        `pipeline_stages` counts and `warps` per block (1 to 32; each an \
        `occupancy_target(w, w)`, pruned where the kernel cannot run it); an empty list is E0300. Used only when the kernel is autotuned \
        (`@op.autotune` or `schedule.autotune`).",
    ),
    (
        "schedule.tile",
        "Directive: the block tile `(BM, BN, BK)`, and the warp tile `warp=(WM, WN)`. `(BM, BN)` \
        for a kernel without a reduction dimension: a direct convolution, or an elementwise kernel \
        (one BM×BN tile of the output, as rows of its last dim, per block: BM·BN / vector threads, \
        whole warps; copies take none yet, E0300). A warp tile that does not divide the block is E0300, and so, when \
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
        is E0101. `TESSERA_AUTOTUNE=off` in the environment takes the model's pick instead. \
        `interpolate` (default True, kept when not given): a shape within an eighth of a tuned \
        one in every dimension (same op, dtypes, arch) reuses its config without a search, \
        marked `interpolated from` in `autotune.report()` and in the cache.",
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
